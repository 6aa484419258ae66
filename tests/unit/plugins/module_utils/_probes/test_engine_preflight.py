"""The preflight: the planned command line through the engine's own parser (probe_engine.run_preflight).

Pure parts (the argv with its stand-ins, the engine's words from a refusal) are checked on REAL captured
refusals of both engine generations (fixtures/engine/README.md, "Preflight refusals"); the runner on small
shell engines written into tmp_path that behave as llama.cpp does with --help first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import engine as probe_engine
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (
    PREFLIGHT_FLAG,
    binary_launcher,
    engine_env,
    engine_refusal,
    preflight_argv,
    run_preflight,
)
from tests.unit.support.paths import FIXTURES as CAPTURED

FIXTURES = CAPTURED / "engine"
REAL_HELP = FIXTURES / "llama-server-11434.0.0-cpu.help.txt"


def captured(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("fixture", "words"),
    [
        ("llama-server-11434.0.0-cpu.preflight-stoi.txt", 'error while handling argument "-c": stoi'),
        ("llama-server-11434.0.0-cpu.preflight-cache-type.txt",
         'error while handling argument "-ctk": Unsupported cache type: q9_9'),
        ("llama-server-11434.0.0-cpu.preflight-invalid-argument.txt", "error: invalid argument: --no-such-flag"),
        ("llama-server-11434.0.0-cpu.preflight-slot-dir.txt",
         'error while handling argument "--slot-save-path": not a directory: /nonexistent/slots'),
        ("llama-server-11434.0.0-cpu.preflight-env.txt",
         'error while handling environment variable "LLAMA_ARG_THREADS": stoi'),
        ("llama-server-llama-cpp-python-0.3.16-cpu.preflight-stoi.txt", 'error while handling argument "-c": stoi'),
        ("llama-server-llama-cpp-python-0.3.16-cpu.preflight-invalid-argument.txt",
         "error: invalid argument: --load-mode"),
    ],
)
def test_the_engines_own_words_from_real_refusals(fixture, words):
    assert engine_refusal(captured(fixture)) == words


def test_refusal_without_error_words_keeps_the_last_lines():
    assert engine_refusal("load_backend: loaded CPU\nsomething odd\nthen this\n") == "something odd / then this"
    assert engine_refusal("") == "no output"


def test_preflight_argv_puts_help_first_and_swaps_only_the_planned_positions():
    argv = ["/bin/llama-server", "-m", "/m.gguf", "--api-key-file", "/run/credentials/u/api_key",
            "--slot-save-path", "/var/lib/x/slots", "--alias", "/var/lib/x/slots"]
    swaps = [(4, "api_key_file"), (6, "slot_dir")]
    out = preflight_argv(argv, swaps, {"api_key_file": "/dev/null", "slot_dir": "/tmp/s"})
    assert out == ["/bin/llama-server", PREFLIGHT_FLAG, "-m", "/m.gguf", "--api-key-file", "/dev/null",
                   "--slot-save-path", "/tmp/s", "--alias", "/var/lib/x/slots"]
    assert argv[4] == "/run/credentials/u/api_key"  # the plan itself is untouched
    assert preflight_argv([], [], {}) == []
    # An index outside the argv, or argv[0], is never replaced.
    assert preflight_argv(["/b", "-c"], [(0, "slot_dir"), (9, "slot_dir")], {"slot_dir": "/x"}) == [
        "/b", PREFLIGHT_FLAG, "-c"]


def parser_engine(directory: Path) -> tuple[str, Path]:
    """A shell engine that parses like llama.cpp with --help first: -c needs digits, --slot-save-path a directory,
    --api-key-file a readable file; anything else passes. Logs its arguments and environment per run."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "runs.log"
    engine = directory / "llama-server"
    engine.write_text(
        "#!/bin/sh\n"
        f'echo "$* | XDG=$XDG_CONFIG_HOME HOME=$HOME" >> "{log}"\n'
        '[ "$1" = --help ] || exit 9\n'
        "shift\n"
        'while [ "$#" -gt 0 ]; do\n'
        '  case "$1" in\n'
        '    -c) case "$2" in *[!0-9]*|"") echo \'error while handling argument "-c": stoi\' >&2; '
        "echo; echo usage:; exit 1;; esac; shift ;;\n"
        '    --slot-save-path) [ -d "$2" ] || { echo "error while handling argument \\"--slot-save-path\\": '
        'not a directory: $2" >&2; exit 1; }; shift ;;\n'
        '    --api-key-file) [ -r "$2" ] || { echo "error: failed to open file $2" >&2; exit 1; }; shift ;;\n'
        "  esac\n"
        "  shift\n"
        "done\n"
        f'cat "{REAL_HELP}"\n'
    )
    engine.chmod(0o755)
    return str(engine), log


@pytest.fixture
def engine(tmp_path):
    return parser_engine(tmp_path / "engine")


def preflight(binary: str, argv: list[str], cache: Path | None, swaps=(), **kw):
    launcher = binary_launcher(binary, engine_env(binary, kw.pop("env", {})))
    return run_preflight(launcher, [binary, *argv], swaps, cache_dir=str(cache) if cache else None, **kw)


def test_a_good_command_line_passes_and_is_cached(engine, tmp_path):
    binary, log = engine
    cache = tmp_path / "cache"
    first = preflight(binary, ["-m", "/m.gguf", "-c", "4096"], cache)
    assert (first.passed, first.runs, first.engine_says) == (True, 1, "")
    again = preflight(binary, ["-m", "/m.gguf", "-c", "4096"], cache)
    assert (again.passed, again.runs) == (True, 0)
    assert len(log.read_text().splitlines()) == 1
    stored = next(cache.glob("preflight-*.json"))
    assert oct(stored.stat().st_mode & 0o777) == "0o600"
    assert json.loads(stored.read_text())["format"] == 1


def test_a_refusal_quotes_the_engine_and_is_never_cached(engine, tmp_path):
    binary, log = engine
    cache = tmp_path / "cache"
    for _attempt in range(2):
        result = preflight(binary, ["-m", "/m.gguf", "-c", "4k"], cache)
        assert (result.passed, result.runs) == (False, 1)
        assert result.engine_says == 'error while handling argument "-c": stoi'
    assert len(log.read_text().splitlines()) == 2
    assert not list(cache.glob("preflight-*.json"))


@pytest.mark.parametrize("change", ["argv", "env", "binary"])
def test_the_cache_holds_for_the_same_engine_command_and_environment_only(engine, tmp_path, change):
    binary, _log = engine
    cache = tmp_path / "cache"
    preflight(binary, ["-c", "512"], cache, env={"LLAMA_ARG_X": "1"})
    if change == "argv":
        again = preflight(binary, ["-c", "1024"], cache, env={"LLAMA_ARG_X": "1"})
    elif change == "env":
        again = preflight(binary, ["-c", "512"], cache, env={"LLAMA_ARG_X": "2"})
    else:
        Path(binary).write_text(Path(binary).read_text() + "\n# rebuilt\n")
        again = preflight(binary, ["-c", "512"], cache, env={"LLAMA_ARG_X": "1"})
    assert (again.passed, again.runs) == (True, 1)


def test_check_mode_reads_but_never_writes_the_cache(engine, tmp_path):
    binary, _log = engine
    cache = tmp_path / "cache"
    assert preflight(binary, ["-c", "512"], cache, write=False).runs == 1
    assert not cache.exists()
    preflight(binary, ["-c", "512"], cache)
    assert preflight(binary, ["-c", "512"], cache, write=False).runs == 0


def test_paths_that_exist_only_under_the_service_get_stand_ins(engine):
    binary, log = engine
    argv = ["--api-key-file", "/run/credentials/llama-server-main.service/api_key",
            "--slot-save-path", "/nonexistent/instances/main/slots"]
    refused = preflight(binary, argv, None)
    assert refused.passed is False  # without stand-ins the engine would fail on both
    swapped = preflight(binary, argv, None, swaps=[(2, "api_key_file"), (4, "slot_dir")])
    assert swapped.passed is True
    line = log.read_text().splitlines()[-1]
    assert f"--api-key-file {os.devnull} " in line
    assert "/run/credentials" not in line
    assert "llamafleet-preflight-" in line  # the throwaway slot directory


def test_no_config_ini_reaches_the_preflight(engine):
    binary, log = engine
    preflight(binary, ["-c", "512"], None, env={"HOME": "/root", "XDG_CONFIG_HOME": "/root/.config"})
    line = log.read_text().splitlines()[-1]
    xdg = line.split("XDG=")[1].split()[0]
    home = line.split("HOME=")[1].split()[0]
    assert xdg.endswith("/config")
    assert "llamafleet-preflight-" in xdg
    assert xdg == home + "/config"
    assert not Path(xdg).exists()  # a throwaway directory, removed afterwards


def test_a_silent_exit_or_a_missing_usage_is_a_refusal(tmp_path):
    quiet = tmp_path / "quiet"
    quiet.write_text("#!/bin/sh\necho 'version: 1 (abc)'\nexit 0\n")  # as if --version had won
    quiet.chmod(0o755)
    result = preflight(str(quiet), ["--version"], None)
    assert result.passed is False
    assert result.engine_says == "version: 1 (abc)"


def test_an_engine_that_does_not_answer_is_a_refusal(tmp_path, monkeypatch):
    slow = tmp_path / "slow"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setattr(probe_engine, "PREFLIGHT_TIMEOUT_S", 0.3)
    result = preflight(str(slow), [], None)
    assert result.passed is False
    assert "did not answer within 0 s" in result.engine_says


def test_a_missing_engine_cannot_be_preflighted(tmp_path):
    result = preflight(str(tmp_path / "nope"), ["-c", "1"], None)
    assert result.passed is False
    assert result.runs == 0
    assert "cannot be started" in result.engine_says


def test_a_system_config_is_reported_and_hidden_only_as_root(engine, tmp_path):
    binary, _log = engine
    root = tmp_path / "root"
    (root / "etc" / "llama.cpp").mkdir(parents=True)
    assert preflight(binary, [], None, root=str(root)).system_config == ""
    (root / "etc" / "llama.cpp" / "config.ini").write_text("parallel = 3\n")
    # Another root than / cannot be hidden from the engine: reported, never silently trusted.
    assert preflight(binary, [], None, root=str(root)).system_config == "visible"


def test_hiding_prefix_on_this_host(monkeypatch, tmp_path):
    monkeypatch.setattr(probe_engine, "system_config_present", lambda root: True)
    monkeypatch.setattr(probe_engine.os, "geteuid", lambda: 0)
    monkeypatch.setattr(probe_engine.shutil, "which", lambda name, path=None: "/usr/bin/unshare")
    prefix, env, state = probe_engine._hiding_prefix("/")
    assert state == "hidden"
    assert prefix[:5] == ["/usr/bin/unshare", "--mount", "--propagation", "private", "--"]
    assert env == {"LLAMAFLEET_HIDE": "/etc/llama.cpp"}
    monkeypatch.setattr(probe_engine.os, "geteuid", lambda: 1000)
    assert probe_engine._hiding_prefix("/")[2] == "visible"
