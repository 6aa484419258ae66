"""Spec sections 1.3-1.5: the composed plan (argv order, env, notes order)."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import (
    CpuBudget,
    HostFacts,
    Plan,
    PlanError,
    SplitDev,
    normalize_preset,
    plan,
)
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE
from tests.unit.support.models import DENSE_32
from tests.unit.support.paths import FIXTURES

REAL_HELP = (FIXTURES / "engine"
             / "llama-server-11434.0.0-cpu.help.txt").read_text()

BIN = "/opt/llama/bin/llama-server"
MODEL = "/srv/models/m.gguf"
DENSE = DENSE_32


def facts(**kw):
    base = {"bin": BIN, "model": MODEL}
    base.update(kw)
    return HostFacts(**base)


def ids(notes):
    return [n.id for n in notes]


def test_minimal_new_engine():
    p = plan({}, facts(help=NEW_ENGINE))
    assert p.argv == [BIN, "-m", MODEL, "-c", "32768", "-b", "2048", "-ub", "512", "--host", "0.0.0.0",
                      "--port", "8080", "--parallel", "1", "-ngl", "auto"]
    assert p.env == {}
    assert p.notes == []
    assert p.warnings == []
    assert p.refusal is None
    assert isinstance(p, Plan)


def test_minimal_unknown_engine_forces_999():
    p = plan({}, facts())
    assert p.argv[-2:] == ["-ngl", "999"]


def test_defaults_take_non_empty_values_as_typed():
    preset = {"CTX": "8192", "BATCH": "1024", "UBATCH": "256", "HOST": "127.0.0.1", "PORT": "9000",
              "PARALLEL": "auto"}
    p = plan(preset, facts(help=NEW_ENGINE))
    # PARALLEL=auto is the engine's own automatic value (-1), which its help names; llama.cpp exits on "auto".
    assert p.argv[3:15] == ["-c", "8192", "-b", "1024", "-ub", "256", "--host", "127.0.0.1", "--port", "9000",
                            "--parallel", "-1"]
    assert ids(p.notes) == ["preset.parallel_auto"]


def test_empty_values_fall_back_to_defaults():
    preset = dict.fromkeys(("CTX", "BATCH", "UBATCH", "HOST", "PORT", "PARALLEL"), "")
    assert plan(preset, facts(help=NEW_ENGINE)).argv == plan({}, facts(help=NEW_ENGINE)).argv


@pytest.mark.parametrize("flag", ["--parallel", "-np", "--parallel=4"])
def test_extra_parallel_suppresses_default(flag):
    p = plan({"EXTRA_ARGS": flag + (" 4" if "=" not in flag else "")}, facts(help=NEW_ENGINE))
    # Only the user's own flag: "--parallel=4" is written as two words (llama.cpp reads no "=" form).
    assert p.argv.count("--parallel") == (0 if flag == "-np" else 1)
    assert p.argv[-2:] == [flag.partition("=")[0], "4"]


@pytest.mark.parametrize("flag", ["-ngl 20", "--n-gpu-layers=20", "--gpu-layers 20"])
def test_extra_ngl_suppresses_ngl_block(flag):
    p = plan({"NGL": "999", "EXTRA_ARGS": flag}, facts(help=NEW_ENGINE))
    assert "auto" not in p.argv
    assert "ngl.sentinel_auto" not in ids(p.notes)


def test_full_argv_order():
    """Every optional item at once, in spec section 1.3 order."""
    preset = {
        "CTX": "16384", "THREADS": "8", "THREADS_BATCH": "16", "NGL": "all", "FIT_TARGET": "2048",
        "KV_TYPE_K": "q8_0", "KV_TYPE_V": "q8_0", "MMPROJ": "mm.gguf", "REASONING": "on",
        "REASONING_BUDGET": "512", "REASONING_PRESERVE": "on", "CACHE_RAM": "4096", "HOST": "127.0.0.1",
        "CTX_CHECKPOINTS": "8", "CKPT_MIN_STEP": "1024", "SPEC": "ngram", "EXTRA_ARGS": "--jinja -fa on",
    }
    f = facts(help=NEW_ENGINE, mmproj="/srv/models/mm.gguf", slot_dir="/var/lib/x/slots",
              api_key_file="/run/credentials/u/key", gguf=DENSE)
    p = plan(preset, f)
    assert p.argv == [
        BIN, "-m", MODEL, "-c", "16384", "-t", "8", "-tb", "16", "-b", "2048", "-ub", "512",
        "--host", "127.0.0.1", "--port", "8080", "--parallel", "1", "-ngl", "all",
        "-ctk", "q8_0", "-ctv", "q8_0", "--mmproj", "/srv/models/mm.gguf",
        "--reasoning", "on", "--reasoning-budget", "512", "--reasoning-preserve",
        "--api-key-file", "/run/credentials/u/key",
        "--cache-ram", "4096", "--slot-save-path", "/var/lib/x/slots",
        "--ctx-checkpoints", "8", "--checkpoint-min-step", "1024",
        "--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", "24", "--spec-ngram-mod-n-min", "48",
        "--spec-ngram-mod-n-max", "64",
        "--jinja", "-fa", "on",
    ]
    # NGL=all blocks --fit, so FIT_TARGET is ignored with a reason.
    assert [n.code for n in p.notes if n.id == "fit.ignored"] == ["blocked"]


def test_fit_target_position_between_ngl_and_kv():
    p = plan({"FIT_TARGET": "2048", "KV_TYPE": "q8_0"}, facts(help=NEW_ENGINE))
    i = p.argv.index("--fit-target")
    assert p.argv[i - 2:i] == ["-ngl", "auto"]
    assert p.argv[i + 1:i + 3] == ["2048", "-ctk"]


def test_env_order_and_content():
    preset = {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_GRAPH_OPT": "on", "OP_OFFLOAD_MIN_BATCH": "128"}
    p = plan(preset, facts(help=NEW_ENGINE, gpus=2))
    assert list(p.env.items()) == [
        ("CUDA_VISIBLE_DEVICES", "1,0"),
        ("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
        ("CUDA_SCALE_LAUNCH_QUEUES", "4x"),
        ("GGML_CUDA_GRAPH_OPT", "1"),
        ("GGML_OP_OFFLOAD_MIN_BATCH", "128"),
    ]
    assert "CUDA_VISIBLE_DEVICES" not in " ".join(p.argv)


def test_env_is_empty_dict_when_nothing_set():
    p = plan({"CUDA_LAUNCH_QUEUES": "off"}, facts(help=NEW_ENGINE, gpus=4))
    assert p.env == {}
    assert isinstance(p.env, dict)


def test_notes_order_across_areas():
    """One note from as many areas as can coexist, in spec section 1.5 order."""
    preset = {
        "NGL": "999", "THREADS": "x", "CUDA_LAUNCH_QUEUES": "8x", "CUDA_GRAPH_OPT": "maybe",
        "OP_OFFLOAD_MIN_BATCH": "0", "SIDE_SLOT": "on", "PARALLEL": "3", "FIT_TARGET": "bad",
        "REASONING": "off", "REASONING_PRESERVE": "perhaps", "CACHE_RAM": "lots", "SLOT_PERSIST": "on",
        "CTX_CHECKPOINTS": "-1", "SPEC": "turbo", "KV_TYPE": "q4_0", "SPLIT_MODE": "diagonal",
        "EXTRA_ARGS": "--load-mode dio --cache-reuse 256",
    }
    p = plan(preset, facts(help=OLD_ENGINE.replace("--slot-save-path PATH", "")))
    assert ids(p.notes) == [
        "load.dio_dropped",
        "split.refused",
        "queues.invalid",
        "graphopt.invalid",
        "opoffload.invalid",
        "threads.invalid",
        "side.refused",
        "fit.ignored",
        "reasoning.unsupported",
        "preserve.invalid",
        "cache.invalid",
        "persist.refused",
        "ckpt.invalid",
        "spec.invalid",
        "fidelity.kv",
        "lossy.shift_default",
        "lossy.cache_reuse",
    ]
    assert "--load-mode" not in p.argv
    assert p.argv[-2:] == ["--cache-reuse", "256"]


def test_ngl_note_comes_after_side_slot_and_before_fit():
    p = plan({"NGL": "999", "SIDE_SLOT": "on", "PARALLEL": "4", "FIT_TARGET": "x"}, facts(help=NEW_ENGINE))
    assert ids(p.notes) == ["side.refused", "ngl.sentinel_auto", "fit.ignored"]


def test_moe_and_load_warning_are_last_notes():
    moe_model = dataclasses.replace(DENSE, expert_count=64)
    # 80 GiB of weights, 24 GiB of VRAM: ~56 GiB resident in 64 GiB of RAM (> 80 %).
    f = facts(help=NEW_ENGINE, gguf=moe_model, model_bytes=80 << 30, vram_mib=24576, gpus=1, ram_mib=65536,
              ram_avail_mib=60000)
    p = plan({"KV_TYPE": "q8_0", "EXTRA_ARGS": "--load-mode mlock"}, f)
    assert ids(p.notes)[-2:] == ["fidelity.kv", "moe.ubatch"]
    # The load-guard warning is a warning only (the planner contract, docs/architecture.md), shown once.
    assert ids(p.warnings) == ["load.warn"]
    assert p.refusal is None


def test_load_guard_refusal():
    f = facts(help=NEW_ENGINE, gguf=DENSE, model_bytes=60 << 30, ram_mib=32768, engine_vram_mib=1024)
    p = plan({"EXTRA_ARGS": "--mlock --no-mmap"}, f)
    assert p.argv[-2:] == ["--load-mode", "mlock"]
    assert p.refusal is not None
    assert p.refusal.id == "load.refuse"
    off = plan({"EXTRA_ARGS": "--mlock --no-mmap", "LOAD_GUARD": "off"}, f)
    assert off.refusal is None
    assert ids(off.warnings) == ["load.warn"]
    assert "load.warn" not in ids(off.notes)


def test_slow_kv_warning_is_a_warning_not_a_note():
    p = plan({"KV_TYPE_K": "q8_0", "KV_TYPE_V": "q4_0"}, facts(help=NEW_ENGINE))
    assert ids(p.warnings) == ["kv.slow"]
    assert "kv.slow" not in ids(p.notes)


def test_split_tensor_accepted_argv_and_env():
    devs = (SplitDev("CUDA0", 16311), SplitDev("CUDA1", 12288))
    f = facts(help=NEW_ENGINE, gguf=DENSE, model_bytes=4 << 30, split_devs=devs, gpus=2)
    p = plan({"SPLIT_MODE": "tensor", "CTX": "8192", "FIT_TARGET": "2048"}, f)
    i = p.argv.index("--parallel")
    assert p.argv[i + 2:] == ["-ngl", "all", "-sm", "tensor", "-ts", "57,43", "-fa", "on"]
    assert p.env == {"GGML_CUDA_ALLREDUCE": "internal"}
    assert ids(p.notes) == ["split.accepted", "fit.ignored"]


def test_side_slot_doubles_context_and_replaces_parallel():
    f = facts(help=NEW_ENGINE, gguf=DENSE, model_bytes=4 << 30, vram_mib=24576)
    p = plan({"SIDE_SLOT": "on", "CTX": "16384"}, f)
    assert p.argv[3:5] == ["-c", "32768"]
    i = p.argv.index("--parallel")
    assert p.argv[i:i + 3] == ["--parallel", "2", "--no-kv-unified"]
    assert ids(p.notes) == ["side.accepted"]


def test_cpu_budget_threads():
    p = plan({}, facts(help=NEW_ENGINE, cpu=CpuBudget(n=4, engine=16, why="cgroup quota of 4 CPU")))
    assert p.argv[5:7] == ["-t", "4"]
    assert ids(p.notes) == ["threads.cpuset"]


class TestApiKey:
    def test_key_file_on_capable_engine(self):
        p = plan({}, facts(help=NEW_ENGINE, api_key_file="/run/credentials/u/api_key"))
        assert p.argv[-2:] == ["--api-key-file", "/run/credentials/u/api_key"]
        assert "--api-key" not in p.argv
        assert p.api_key_via_env is False

    def test_engine_without_key_file_flag_uses_env(self):
        p = plan({}, facts(help=OLD_ENGINE, api_key_file="/run/credentials/u/api_key"))
        assert "--api-key-file" not in p.argv
        assert "--api-key" not in p.argv
        assert p.api_key_via_env is True
        assert ids(p.notes) == ["apikey.env", "lossy.shift_default"]

    def test_preset_key_never_in_argv_or_notes(self):
        secret = "sk-very-secret-123"
        p = plan({"API_KEY": secret, "HOST": "10.1.1.1", "SLOT_PERSIST": "on"},
                 facts(help=NEW_ENGINE, slot_dir="/x/slots"))
        blob = repr(p)
        assert secret not in blob
        assert p.api_key_via_env is True
        # The key counts as in effect: slot save path is allowed on a public host.
        assert "--slot-save-path" in p.argv

    @pytest.mark.parametrize("help_text", [NEW_ENGINE, ""], ids=["known engine", "unknown engine"])
    @pytest.mark.parametrize("extra", ["--api-key s3cret-key", "--api-key=s3cret-key", "--api_key s3cret-key",
                                       "-c 4096 --API-KEY s3cret-key", "--hf-token hf_x", "-hft hf_x"])
    def test_key_in_extra_args_is_refused(self, extra, help_text):
        with pytest.raises(PlanError, match=r"must not carry --(api-key|hf-token) .in any spelling") as caught:
            plan({"EXTRA_ARGS": extra}, facts(help=help_text))
        assert "s3cret-key" not in str(caught.value)

    @pytest.mark.parametrize("help_text", [NEW_ENGINE, ""], ids=["known engine", "unknown engine"])
    @pytest.mark.parametrize("extra", ["--api-key-file /etc/keys", "--api-key-file=/etc/keys",
                                       "--api_key_file /etc/shadow"])
    def test_a_key_file_of_ones_own_is_refused(self, extra, help_text):
        with pytest.raises(PlanError, match="must not carry --api-key-file") as caught:
            plan({"EXTRA_ARGS": extra}, facts(help=help_text))
        assert (caught.value.key, caught.value.token) == ("EXTRA_ARGS", "--api-key-file")

    @pytest.mark.parametrize("help_text", [NEW_ENGINE, ""], ids=["known engine", "unknown engine"])
    @pytest.mark.parametrize("extra", ["-m /etc/shadow", "--model /etc/shadow", "--model=/etc/shadow",
                                       "-c 4096 -m=/srv/other.gguf"])
    def test_a_model_in_extra_args_is_refused(self, extra, help_text):
        with pytest.raises(PlanError, match="the model is the MODEL key") as caught:
            plan({"EXTRA_ARGS": extra}, facts(help=help_text))
        assert caught.value.key == "EXTRA_ARGS"

    def test_no_key_no_flag(self):
        p = plan({}, facts(help=NEW_ENGINE))
        assert "--api-key-file" not in p.argv
        assert p.api_key_via_env is False


def test_external_preset_plans_nothing():
    p = plan({"EXTERNAL": "1", "BIN": "", "MODEL": ""}, HostFacts())
    assert p.external is True
    assert p.argv == []
    assert ids(p.notes) == ["external"]


@pytest.mark.parametrize("written", [{"EXTERNAL": False}, {"external": "off"}, {"EXTERNAL": 0}, {"EXTERNAL": "No"}],
                         ids=["yaml false", "off", "yaml 0", "No"])
def test_an_external_preset_switched_off_plans_a_local_engine(written):
    """Loki reads anything but 1 as a local engine; a YAML ``false`` arrives as ``off`` (normalize_preset)."""
    p = plan(normalize_preset(written), facts(help=NEW_ENGINE))
    assert p.external is False
    assert p.argv[:3] == [BIN, "-m", MODEL]
    typed = normalize_preset(written)["EXTERNAL"]
    normalised = [n.text for n in p.notes if n.code == "EXTERNAL"]
    assert normalised == ([] if typed == "0" else [f"EXTERNAL={typed} read as 0"])


@pytest.mark.parametrize(
    ("preset", "f", "match"),
    [
        ({}, HostFacts(model=MODEL), "BIN not defined"),
        ({"BIN": "  "}, HostFacts(model=MODEL), "BIN not defined"),
        ({}, HostFacts(bin=BIN), "MODEL not defined"),
    ],
)
def test_missing_bin_or_model(preset, f, match):
    with pytest.raises(PlanError, match=match):
        plan(preset, f)


def test_preset_bin_and_model_used_when_facts_silent():
    p = plan({"BIN": "/usr/bin/llama-server", "MODEL": "x.gguf"}, HostFacts())
    assert p.argv[:3] == ["/usr/bin/llama-server", "-m", "x.gguf"]


def test_extra_args_last_verbatim_after_normalisation():
    p = plan({"EXTRA_ARGS": "--mlock --jinja --chat-template-file '/etc/a b.jinja'"}, facts(help=NEW_ENGINE))
    assert p.argv[-5:] == ["--jinja", "--chat-template-file", "/etc/a b.jinja", "--load-mode", "mmap+mlock"]


def test_old_engine_downgrades_load_mode():
    p = plan({"EXTRA_ARGS": "--load-mode none"}, facts(help=OLD_ENGINE))
    assert p.argv[-1] == "--no-mmap"
    assert "--load-mode" not in p.argv


def test_plan_helpers_for_env_text_and_yaml():
    text = "CTX=4096\nSIDE_SLOT=off\n"
    assert planner.plan_from_env_text(text, facts()).argv[4] == "4096"
    assert planner.plan_from_mapping({"ctx": 4096, "side_slot": False}, facts()).argv[4] == "4096"
    with pytest.raises(planner.PresetError, match="EXTRA_ARGS"):
        planner.plan_from_mapping({"extra_args": ["--jinja"]}, facts())


def test_plan_does_not_mutate_inputs():
    preset = {"EXTRA_ARGS": "--mlock", "CTX": "100"}
    arg_env = {"LLAMA_ARG_CACHE_RAM": "0"}
    f = facts(help=NEW_ENGINE, arg_env=arg_env)
    plan(preset, f)
    assert preset == {"EXTRA_ARGS": "--mlock", "CTX": "100"}
    assert arg_env == {"LLAMA_ARG_CACHE_RAM": "0"}


def test_same_inputs_same_plan():
    f = facts(help=NEW_ENGINE, gguf=DENSE, model_bytes=8 << 30, vram_mib=24576, ram_mib=65536,
              ram_avail_mib=50000)
    a = plan({"SPEC": "auto", "SIDE_SLOT": "on"}, f)
    b = plan({"SPEC": "auto", "SIDE_SLOT": "on"}, f)
    assert a == b


@pytest.mark.parametrize("engine", ["", "llama.cpp", " LlamaCpp ", "llama-server"])
def test_engine_llama_cpp_is_silent(engine):
    assert plan({"ENGINE": engine}, facts(help=NEW_ENGINE)).notes == []


def test_engine_strata_is_out_of_scope():
    with pytest.raises(PlanError, match="ENGINE=strata"):
        plan({"ENGINE": " Strata "}, facts())


def test_engine_unknown_is_noted_first():
    p = plan({"ENGINE": "vllm", "EXTRA_ARGS": "--load-mode dio"}, facts(help=OLD_ENGINE))
    assert ids(p.notes)[:2] == ["engine.ignored", "load.dio_dropped"]
    assert "ENGINE=vllm" in p.notes[0].text


@pytest.mark.parametrize("key", ["TEMP", "TOP_P", "TOP_K", "MIN_P", "PRESENCE_PENALTY", "REPEAT_PENALTY",
                                 "REASONING_ECHO", "REASONING_EFFORT", "QUANT", "EXTERNAL_URL", "EXTERNAL_MODEL",
                                 "EXTERNAL_KEY", "EXTERNAL_VISION", "STRATA_CONFIG"])
def test_keys_not_used_at_launch_are_silent(key):
    base = plan({}, facts(help=NEW_ENGINE))
    with_key = plan({key: "0.7"}, facts(help=NEW_ENGINE))
    assert with_key == base


# ---------------------------------------------------------------- the plan's decisions (read downstream)


@pytest.mark.parametrize(
    ("preset", "listen", "loopback", "url", "socket"),
    [
        ({}, ("0.0.0.0",), False, "http://127.0.0.1:8080/health", ""),
        ({"HOST": "127.0.0.2"}, ("127.0.0.2",), True, "http://127.0.0.2:8080/health", ""),
        ({"HOST": "127.0.0.1,::1"}, ("127.0.0.1", "::1"), True, "http://127.0.0.1:8080/health", ""),
        ({"HOST": "127.0.0.1,10.0.0.5"}, ("127.0.0.1", "10.0.0.5"), False, "http://127.0.0.1:8080/health", ""),
        ({"HOST": "::", "PORT": "9000"}, ("::",), False, "http://[::1]:9000/health", ""),
        ({"HOST": "/run/llama/main.sock"}, ("/run/llama/main.sock",), True, "http://localhost/health",
         "/run/llama/main.sock"),
        ({"HOST": "127.0.0.1", "EXTRA_ARGS": "--host 0.0.0.0 --port 9001"}, ("0.0.0.0",), False,
         "http://127.0.0.1:9001/health", ""),
    ],
)
def test_listen_decisions(preset, listen, loopback, url, socket):
    d = plan(preset, facts(help=REAL_HELP)).decisions
    assert (d.listen, d.loopback_only, d.health_url, d.health_unix_socket) == (listen, loopback, url, socket)
    assert d.host == ",".join(listen)


def test_loopback_is_one_rule_for_the_slot_directory_and_the_role():
    # 127.0.0.2 is loopback: the server is unreachable from others, so the slot save path is safe without a key.
    d = plan({"HOST": "127.0.0.2"}, facts(help=REAL_HELP, slot_dir="/var/lib/x/slots")).decisions
    assert d.loopback_only is True
    assert d.slot_dir == "/var/lib/x/slots"
    public = plan({"HOST": "10.0.0.5"}, facts(help=REAL_HELP, slot_dir="/var/lib/x/slots")).decisions
    assert (public.loopback_only, public.slot_dir) == (False, "")


def test_extra_args_listen_values_are_held_to_the_host_and_port_rules():
    with pytest.raises(PlanError) as caught:
        plan({"EXTRA_ARGS": "--host '0.0.0.0 --foo'"}, facts(help=REAL_HELP))
    assert (caught.value.key, caught.value.token) == ("EXTRA_ARGS", "--host")
    with pytest.raises(PlanError, match="EXTRA_ARGS: --port '99999'"):
        plan({"EXTRA_ARGS": "--port 99999"}, facts(help=REAL_HELP))


def test_slot_persist_decision_follows_the_plan_not_the_preset():
    slot = facts(help=REAL_HELP, slot_dir="/var/lib/x/slots", gguf=DENSE)
    kept = plan({"SLOT_PERSIST": "on", "HOST": "127.0.0.1"}, slot).decisions
    assert kept.slot_persist is True
    # Refused (speculative decoding): the slot directory is still planned, its persist-* files are not kept.
    refused = plan({"SLOT_PERSIST": "on", "HOST": "127.0.0.1", "SPEC": "ngram"}, slot)
    assert "persist.refused" in ids(refused.notes)
    assert refused.decisions.slot_dir == "/var/lib/x/slots"
    assert refused.decisions.slot_persist is False


def test_preflight_swaps_point_at_the_key_file_and_slot_directory():
    p = plan({"HOST": "127.0.0.1"}, facts(help=REAL_HELP, slot_dir="/s", api_key_file="/run/credentials/u/api_key"))
    swaps = {what: index for index, what in p.decisions.preflight_swaps}
    assert p.argv[swaps["api_key_file"]] == "/run/credentials/u/api_key"
    assert p.argv[swaps["slot_dir"]] == "/s"
    assert p.argv[swaps["api_key_file"] - 1] == "--api-key-file"
    assert p.argv[swaps["slot_dir"] - 1] == "--slot-save-path"
    assert p.decisions.api_key_file == "/run/credentials/u/api_key"


# ---------------------------------------------------------------- METRICS (llamafleet's own key)
@pytest.mark.parametrize(
    ("preset", "env", "served", "count"),
    [
        pytest.param({}, {}, False, 0, id="default-off"),
        pytest.param({"METRICS": "on"}, {}, True, 1, id="on"),
        pytest.param({"METRICS": "YES"}, {}, True, 1, id="yes-any-case"),
        pytest.param({"METRICS": "on", "EXTRA_ARGS": "--metrics"}, {}, True, 1, id="on-and-by-hand-once"),
        pytest.param({"METRICS": "off", "EXTRA_ARGS": "--metrics"}, {}, True, 1, id="extra-args-win"),
        pytest.param({}, {"LLAMA_ARG_ENDPOINT_METRICS": "1"}, True, 0, id="service-environment"),
    ],
)
def test_metrics_flag_and_decision(preset, env, served, count):
    p = plan({"HOST": "127.0.0.1", **preset}, facts(help=REAL_HELP, arg_env=env))
    assert p.argv.count("--metrics") == count
    assert p.decisions.metrics is served
    assert p.decisions.as_dict()["metrics"] is served


def test_metrics_refuses_a_word_it_cannot_read():
    with pytest.raises(PlanError) as err:
        plan({"METRICS": "maybe"}, facts(help=REAL_HELP))
    assert err.value.key == "METRICS"
    assert "on (" in str(err.value)


def test_metrics_comes_before_extra_args_so_they_still_end_argv():
    p = plan({"METRICS": "on", "EXTRA_ARGS": "--jinja"}, facts(help=REAL_HELP))
    assert p.argv[-1] == "--jinja"
    assert p.argv.index("--metrics") < p.argv.index("--jinja")
    assert "metrics.on" in ids(p.notes)


# ---------------------------------------------------------------- the memory estimate (Plan.memory)
SIZED = dataclasses.replace(DENSE, vocab_size=32000, layer_bytes=(10 * 2**20,) * DENSE.block_count,
                            embed_bytes=64 * 2**20, other_bytes=64 * 2**20)


@pytest.mark.parametrize(
    ("preset", "gpus", "devices"),
    [
        pytest.param({"CTX": "4096", "NGL": "0"}, 2, ["host"], id="no-layers-on-cards"),
        pytest.param({"CTX": "4096"}, 0, ["host"], id="cpu-host"),
        pytest.param({"CTX": "4096"}, 2, ["0", "1", "host"], id="two-cards"),
    ],
)
def test_the_plan_says_what_the_launch_needs_per_device(preset, gpus, devices):
    p = plan({"HOST": "127.0.0.1", **preset}, facts(help=REAL_HELP, gguf=SIZED, gpus=gpus))
    assert p.memory.known is True
    assert [d.device for d in p.memory.devices] == devices
    assert p.memory.host_mib + p.memory.cards_mib == sum(d.total_mib for d in p.memory.devices)


def test_a_larger_context_needs_more_and_an_unknown_header_says_why():
    small = plan({"CTX": "4096"}, facts(help=REAL_HELP, gguf=SIZED)).memory
    large = plan({"CTX": "32768"}, facts(help=REAL_HELP, gguf=SIZED)).memory
    assert large.host_mib > small.host_mib
    unknown = plan({"CTX": "4096"}, facts(help=REAL_HELP, gguf=DENSE)).memory
    assert (unknown.known, unknown.why_unknown) == (False, "the model's header gave no tensor table or vocabulary")
    assert plan({"EXTERNAL": "1"}, facts()).memory.known is False
