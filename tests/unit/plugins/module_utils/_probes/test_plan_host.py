"""probe_host: the probes wired together for one host (the I/O half of llama_server_plan).

Inputs are fixture trees (a cgroup v2 host whose instance unit holds 9 GiB, an
8-thread SMT host with a 1.5 CPU quota), a fake engine that prints the real
captured help of the CPU build, GGUF files written with gguf's writer, and a
stand-in for the GPU listing (no GPU here).
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import plan_host as probe_host
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.docker import DockerAccess
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gpu import Gpu
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import (
    ProbeError,
    ProbeOptions,
    probe_and_plan,
    resolve_bin,
)
from tests.unit.support.paths import FIXTURES

REAL_HELP = FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt"
H100 = Gpu(index=0, uuid="GPU-0", name="NVIDIA H100 80GB HBM3", total_mib=81559)
RTX = Gpu(index=1, uuid="GPU-1", name="NVIDIA GeForce RTX 4090", total_mib=24564)


def write_model(path: Path, arch: str = "llama", blocks: int = 4, hybrid: bool = False) -> Path:
    writer = GGUFWriter(path, arch)
    writer.add_block_count(blocks)
    writer.add_context_length(8192)
    writer.add_embedding_length(256)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    if hybrid:
        writer.add_uint32(f"{arch}.ssm.state_size", 16)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def fake_engine(directory: Path, version: str = "version: 10450 (ece963f)") -> tuple[Path, Path]:
    """An executable that answers --help with the real captured help and logs each run's arguments.

    The preflight runs it as ``--help <planned arguments>``: it prints the help then too, as llama.cpp does.
    """
    directory.mkdir(parents=True, exist_ok=True)
    runs = directory / "runs.log"
    engine = directory / "llama-server"
    engine.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{runs}"\n'
        'case "$1" in\n'
        f'  --help) cat "{REAL_HELP}" ;;\n'
        f'  --version) echo "{version}" ;;\n'
        "  --list-devices) echo 'Available devices:';\n"
        "    echo '  CUDA0: NVIDIA H100 80GB HBM3 (81559 MiB, 80000 MiB free)' ;;\n"
        "esac\n"
    )
    engine.chmod(engine.stat().st_mode | stat.S_IXUSR)
    return engine, runs


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host root (RAM, cgroups, CPUs), a models dir with a GGUF, a fake engine, two GPUs."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "memory" / "v2-host-with-unit", root)
    shutil.copytree(FIXTURES / "cpu" / "smt-4c8t-quota-v2", root, dirs_exist_ok=True)
    models = tmp_path / "models"
    models.mkdir()
    write_model(models / "m.gguf")
    engine, runs = fake_engine(tmp_path / "engine")
    monkeypatch.setattr(probe_host, "list_gpus", lambda: ([H100, RTX], "nvml"))
    return {"root": str(root), "models": models, "engine": engine, "runs": runs, "home": str(tmp_path / "home")}


def options(host, **kw) -> ProbeOptions:
    preset = {"MODEL": "m.gguf", "HOST": "127.0.0.1"}
    preset.update(kw.pop("preset", {}))
    base = {
        "preset": preset,
        "bin": str(host["engine"]),
        "home": host["home"],
        "model_dirs": [str(host["models"])],
        "root": host["root"],
        "unit": "llama-server-main.service",
    }
    base.update(kw)
    return ProbeOptions(**base)


def test_probes_flow_into_the_facts_and_plan(host):
    result = probe_and_plan(options(host))
    facts = result.facts
    assert facts.help == REAL_HELP.read_text()
    assert facts.model == str(host["models"] / "m.gguf")
    assert facts.gguf is not None
    assert facts.gguf.block_count == 4
    assert facts.model_bytes == (host["models"] / "m.gguf").stat().st_size
    # Both cards are visible: NVML totals summed; two GPUs counted.
    assert facts.vram_mib == 81559 + 24564
    assert facts.gpus == 2
    # meminfo: 65758960 kB total, 58211632 kB available; the unit's own 9 GiB is added back.
    assert facts.ram_mib == 65758960 // 1024
    assert facts.ram_avail_mib == min(65758960 // 1024, 65758960 // 1024 - (65758960 - 58211632) // 1024 + 9216)
    # 4 physical cores, quota 1.5 CPU -> 2 threads.
    assert facts.cpu is not None
    assert facts.cpu.n == 2
    assert facts.slot_dir == host["home"] + "/slots"
    assert result.engine_runs == 2  # --help (not hybrid, no SPEC=auto), then the preflight
    assert result.preflight.passed is True
    preflight_line = host["runs"].read_text().splitlines()[1]
    assert preflight_line.startswith("--help -m " + facts.model)
    assert "127.0.0.1" in preflight_line
    assert result.plan.argv[0] == str(host["engine"])
    assert result.plan.argv[result.plan.argv.index("-t") + 1] == "2"
    assert result.probed["gpu_source"] == "nvml"
    assert result.warnings == []


def test_second_probe_reads_the_engine_from_the_cache(host):
    probe_and_plan(options(host))
    again = probe_and_plan(options(host))
    assert again.engine_runs == 0
    assert again.preflight.passed is True
    assert again.preflight.runs == 0
    runs = host["runs"].read_text().splitlines()
    assert len(runs) == 2
    assert runs[0] == "--help"
    assert runs[1].startswith("--help -m ")


def test_a_changed_plan_is_preflighted_again(host):
    probe_and_plan(options(host))
    changed = probe_and_plan(options(host, preset={"CTX": "4096"}))
    assert changed.engine_runs == 1
    assert " -c 4096 " in host["runs"].read_text().splitlines()[-1]


def test_a_refusal_of_the_engine_is_returned_with_its_words_and_not_cached(host, tmp_path):
    engine = tmp_path / "picky" / "llama-server"
    engine.parent.mkdir()
    engine.write_text(
        "#!/bin/sh\n"
        f'if [ "$#" -eq 1 ]; then cat "{REAL_HELP}"; exit 0; fi\n'
        'echo "error while handling argument \\"-c\\": stoi" >&2; echo; echo "usage:"; echo "-c N"; exit 1\n'
    )
    engine.chmod(0o755)
    first = probe_and_plan(options(host, bin=str(engine)))
    assert first.preflight.passed is False
    assert first.preflight.engine_says == 'error while handling argument "-c": stoi'
    second = probe_and_plan(options(host, bin=str(engine)))
    assert second.preflight.runs == 1  # a refusal is asked again, never taken from the cache


def test_check_mode_does_not_write_the_cache(host):
    first = probe_and_plan(options(host, write_cache=False))
    second = probe_and_plan(options(host, write_cache=False))
    assert (first.engine_runs, second.engine_runs) == (2, 2)
    assert not (Path(host["home"]) / ".cache").exists()


def test_preset_gpu_selection_limits_vram_and_count(host):
    result = probe_and_plan(options(host, preset={"CUDA_VISIBLE_DEVICES": "1"}))
    assert result.facts.vram_mib == 24564
    assert result.facts.gpus == 1
    assert result.plan.env["CUDA_VISIBLE_DEVICES"] == "1"


def test_service_env_selection_without_pci_order_is_a_lower_bound(host):
    result = probe_and_plan(options(host, environment={"CUDA_VISIBLE_DEVICES": "0,1"}))
    assert result.facts.vram_mib == 2 * 24564


def test_uuid_selection_is_unknown_vram(host):
    result = probe_and_plan(options(host, preset={"CUDA_VISIBLE_DEVICES": "GPU-0"}))
    assert result.facts.vram_mib == 0


@pytest.mark.parametrize(
    ("preset", "environment", "gpus"),
    [
        pytest.param({"EXTRA_ARGS": "-dev CUDA0"}, {}, 0, id="device-in-extra"),
        pytest.param({}, {"LLAMA_ARG_DEVICE": "CUDA0"}, 0, id="device-in-env"),
        pytest.param({"CUDA_LAUNCH_QUEUES": "OFF"}, {}, 0, id="queues-off"),
        pytest.param({}, {"CUDA_SCALE_LAUNCH_QUEUES": "2x"}, 0, id="queues-set-by-user"),
    ],
)
def test_gpu_count_skipped_when_spec_says_so(host, preset, environment, gpus):
    result = probe_and_plan(options(host, preset=preset, environment=environment))
    assert result.facts.gpus == gpus


def test_device_names_are_checked_against_the_engines_list_once(host):
    with pytest.raises(PlanError, match="'CUDA1' is no device of this host \\(this engine lists CUDA0\\)"):
        probe_and_plan(options(host, preset={"EXTRA_ARGS": "-dev CUDA1"}))
    ok = probe_and_plan(options(host, preset={"EXTRA_ARGS": "-dev CUDA0 -ot exps=CPU"}))
    assert ok.facts.engine_devices == ("CUDA0",)
    again = probe_and_plan(options(host, preset={"EXTRA_ARGS": "-dev CUDA0 -ot exps=CPU"}))
    assert again.engine_runs == 0  # help, device list and preflight all from the cache
    runs = host["runs"].read_text().splitlines()
    assert runs.count("--list-devices") == 1


def test_llama_arg_threads_skips_the_cpu_probe(host):
    result = probe_and_plan(options(host, environment={"LLAMA_ARG_THREADS": "6"}))
    assert result.facts.cpu is None
    assert "-t" not in result.plan.argv


def test_service_env_reaches_the_planner(host):
    env = {"LLAMA_ARG_CACHE_RAM": " 0 ", "GGML_CUDA_GRAPH_OPT": "0", "HOME": "/root", "LLAMA_ARG_NO_KV_OFFLOAD": ""}
    result = probe_and_plan(options(host, environment=env))
    assert result.facts.arg_env == {"LLAMA_ARG_CACHE_RAM": "0", "LLAMA_ARG_NO_KV_OFFLOAD": "1"}
    assert result.facts.user_env == {"GGML_CUDA_GRAPH_OPT": "0"}


def test_stable_ram_avail_keeps_a_close_previous_reading(host):
    measured = probe_and_plan(options(host)).facts.ram_avail_mib
    kept = probe_and_plan(options(host, stable_ram_avail_mib=measured - 2000)).facts.ram_avail_mib
    assert kept == measured - 2000
    far = probe_and_plan(options(host, stable_ram_avail_mib=measured - 20000)).facts.ram_avail_mib
    assert far == measured


def test_engine_build_read_for_spec_auto_and_trusted_only_when_official(host):
    unofficial = probe_and_plan(options(host, preset={"SPEC": "auto"}))
    assert unofficial.facts.engine_build == 0
    official = probe_and_plan(options(host, preset={"SPEC": "auto"}, engine_official=True))
    assert official.facts.engine_build == 10450
    runs = host["runs"].read_text().splitlines()
    assert [r for r in runs if r in ("--help", "--version")] == ["--help", "--version"]
    assert len(runs) == 3  # and one preflight: the second probe plans the same command line


def test_hybrid_model_reads_the_version(host):
    write_model(host["models"] / "h.gguf", arch="qwen3next", hybrid=True)
    result = probe_and_plan(options(host, preset={"MODEL": "h.gguf"}, engine_official=True))
    assert result.facts.gguf.hybrid is True
    assert result.facts.engine_build == 10450


def test_draft_that_is_the_model_itself(host):
    result = probe_and_plan(options(host, preset={"SPEC": "mtp", "MODEL_DRAFT": "m.gguf"}))
    assert result.facts.draft_is_model is True
    assert result.facts.draft_gguf is not None


def test_missing_draft_is_not_fatal(host):
    result = probe_and_plan(options(host, preset={"SPEC": "mtp", "MODEL_DRAFT": "nope.gguf"}))
    assert result.facts.draft == ""
    assert result.facts.draft_err != ""
    assert "spec.skip" in [n.id for n in result.plan.notes]


def test_unreadable_model_metadata_is_a_warning_not_an_error(host):
    (host["models"] / "bad.gguf").write_bytes(b"GGUF\x03\x00\x00\x00truncated")
    result = probe_and_plan(options(host, preset={"MODEL": "bad.gguf"}))
    assert result.facts.gguf is None
    assert any("GGUF metadata unreadable" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("preset", "message"),
    [
        pytest.param({"MODEL": "absent.gguf"}, "model not found", id="model-missing"),
        pytest.param({"MODEL": ""}, "MODEL not defined", id="model-empty"),
        pytest.param({"MODEL": "notes.txt"}, ".gguf", id="model-not-gguf"),
        pytest.param({"MMPROJ": "mm.gguf"}, "vision projector not found", id="mmproj-missing"),
    ],
)
def test_operator_errors(host, preset, message):
    with pytest.raises(ProbeError, match=message):
        probe_and_plan(options(host, preset=preset))


def test_missing_engine_plans_for_an_unknown_engine_and_fails_its_preflight(host):
    result = probe_and_plan(options(host, bin=str(Path(host["home"]) / "nope" / "llama-server")))
    assert result.facts.help == ""
    assert result.plan.argv[result.plan.argv.index("-ngl") + 1] == "999"
    assert any("--help gave nothing" in w for w in result.warnings)
    assert result.preflight.passed is False
    assert "cannot be started" in result.preflight.engine_says


def test_preflight_can_be_switched_off(host):
    result = probe_and_plan(options(host, preflight=False))
    assert result.preflight is None
    assert host["runs"].read_text().splitlines() == ["--help"]


def test_external_preset_probes_nothing(host):
    result = probe_and_plan(options(host, preset={"EXTERNAL": "1", "MODEL": ""}))
    assert result.plan.external is True
    assert not host["runs"].exists()


def test_a_typo_of_a_key_fails_before_the_engine_runs(host):
    with pytest.raises(PlanError, match="NLG is not a Loki key; did you mean NGL"):
        probe_and_plan(options(host, preset={"NLG": "99", "TEMP": "0.7"}))


def test_a_bad_gpu_selection_fails_before_the_engine_runs(host):
    with pytest.raises(PlanError, match="CUDA_VISIBLE_DEVICES='0, 1' is not valid"):
        probe_and_plan(options(host, preset={"CUDA_VISIBLE_DEVICES": "0, 1"}))
    assert not host["runs"].exists()


@pytest.mark.parametrize(
    ("bin_option", "preset", "expected"),
    [
        ("/opt/b/llama-server", {}, "/opt/b/llama-server"),
        ("", {"BIN": " bin/llama-server "}, "/var/lib/x/bin/llama-server"),
        ("/opt/b/../c/llama-server", {"BIN": "/ignored"}, "/opt/c/llama-server"),
    ],
)
def test_resolve_bin(bin_option, preset, expected):
    assert resolve_bin(ProbeOptions(preset=preset, bin=bin_option, home="/var/lib/x")) == expected


def test_resolve_bin_requires_one():
    with pytest.raises(ProbeError, match="BIN not defined"):
        resolve_bin(ProbeOptions(preset={}))


def fake_docker_for(engine: Path, directory: Path, container_pid: int) -> str:
    """A docker CLI whose ``run ... IMAGE ARGS`` runs the fake engine with ARGS, and which knows one container.

    Each ``run`` logs its own options (before the image) to ``runs.log`` in ``directory``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    cli = directory / "docker"
    image = "sha256:" + "e" * 64
    cli.write_text(
        "#!/bin/sh\n"
        'case "$1 $2" in\n'
        f'  "image inspect") echo "{image}" ; exit 0 ;;\n'
        f'  "container inspect") echo "{"c" * 64} {container_pid}" ; exit 0 ;;\n'
        "esac\n"
        '[ "$1" = run ] || exit 2\n'
        "options=\n"
        'while [ "$#" -gt 0 ]; do\n'
        '  word=$1; shift\n'
        f'  if [ "$word" = "{image}" ]; then echo "$options" >> "{directory}/runs.log"; exec "{engine}" "$@"; fi\n'
        '  options="$options $word"\n'
        "done\n"
        "exit 2\n"
    )
    cli.chmod(0o755)
    return str(cli)


def test_compose_runtime_reads_the_image_and_counts_its_own_container(host, tmp_path):
    root = Path(host["root"])
    (root / "proc" / "4242").mkdir(parents=True)
    (root / "proc" / "4242" / "cgroup").write_text(f"0::/system.slice/docker-{'c' * 64}.scope\n")
    scope = root / "sys" / "fs" / "cgroup" / "system.slice" / f"docker-{'c' * 64}.scope"
    scope.mkdir(parents=True)
    (scope / "memory.stat").write_text(f"anon {3 << 30}\nfile 0\n")
    cli = fake_docker_for(host["engine"], tmp_path / "docker", 4242)
    opts = options(host, bin="/app/llama-server", unit="", engine_image="llamafleet/llama-server:cpu",
                   container="llama-server-main", docker=DockerAccess(cli=cli))
    result = probe_and_plan(opts)
    assert result.facts.help == REAL_HELP.read_text()
    assert result.plan.argv[0] == "/app/llama-server"
    assert result.engine_runs == 2  # --help, then the preflight, both in the image
    assert result.preflight.passed is True
    assert result.probed["engine_image_id"] == "sha256:" + "e" * 64
    assert result.probed["container_id"] == "c" * 64
    assert result.container.pid == 4242
    assert result.probed["own_service_mib"] == 3072
    runs = host["runs"].read_text().splitlines()
    assert runs[0] == "--help"
    assert runs[1].startswith("--help -m ")
    # The preflight container sees no llama.cpp config.ini: the service's own empty mounts.
    docker_runs = (tmp_path / "docker" / "runs.log").read_text().splitlines()
    assert "--tmpfs /etc/llama.cpp:ro,size=4k" not in docker_runs[0]
    assert "--tmpfs /etc/llama.cpp:ro,size=4k --tmpfs /tmp --env XDG_CONFIG_HOME=/tmp/llamafleet-no-config" in (
        docker_runs[1])
    # The image's texts are cached by its ID: a second probe starts no container.
    assert probe_and_plan(opts).engine_runs == 0


def fake_systemctl(directory: Path, environment: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    cli = directory / "systemctl"
    cli.write_text(f"#!/bin/sh\n[ \"$1\" = show-environment ] || exit 1\nprintf '%s' '{environment}'\n")
    cli.chmod(0o755)
    return str(cli)


def test_manager_engine_variables_the_plan_does_not_set_are_unset(host, tmp_path):
    manager = (
        "LANG=C.UTF-8\nPATH=/usr/bin\nLLAMA_ARG_CTX_SIZE=8\nGGML_SCHED=1\nCUDA_VISIBLE_DEVICES=1\nLLAMA_API_KEY=k\n"
    )
    systemctl = fake_systemctl(tmp_path / "sd", manager)
    result = probe_and_plan(options(host, systemctl=systemctl, preset={"CUDA_VISIBLE_DEVICES": "0"},
                                    environment={"GGML_SCHED": "2"}))
    # CUDA_VISIBLE_DEVICES is the plan's, GGML_SCHED the service environment's: only the others go.
    assert result.unset_environment == ["LLAMA_API_KEY", "LLAMA_ARG_CTX_SIZE"]


def test_no_manager_question_for_a_container(host, tmp_path):
    systemctl = fake_systemctl(tmp_path / "sd", "LLAMA_ARG_CTX_SIZE=8\n")
    result = probe_and_plan(options(host, systemctl=systemctl, unit=""))
    assert result.unset_environment == []


def test_a_bad_service_variable_fails_before_the_engine_runs(host):
    with pytest.raises(PlanError, match="environment variable 'LLAMA_ARG_OVERRIDE_TENSOR' is set to nothing"):
        probe_and_plan(options(host, environment={"LLAMA_ARG_OVERRIDE_TENSOR": ""}))
    assert not host["runs"].exists()


def test_all_gpus_in_the_preset_leaves_the_service_selection_alone(host):
    result = probe_and_plan(options(host, preset={"CUDA_VISIBLE_DEVICES": "all"},
                                    environment={"CUDA_VISIBLE_DEVICES": "0,1"}))
    assert "CUDA_VISIBLE_DEVICES" not in result.plan.env
    assert [n.id for n in result.plan.notes if n.code == "CUDA_VISIBLE_DEVICES"] == ["preset.normalised"]
    # The service's own selection, without PCI order: a lower bound (smallest card twice).
    assert result.facts.vram_mib == 2 * 24564
