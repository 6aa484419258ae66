"""The engine's own parser as the last gate, on both real engine generations and through Ansible.

What the typed preset and the flag table cannot know (a file the engine reads at parse time, a device name,
a service variable) is refused by the engine itself in the preflight, quoted word for word, before anything on
the host changes, in check mode too. Neither a planted ~/.config/llama.cpp/config.ini nor a planted
/etc/llama.cpp/config.ini takes part in it: each is first shown to change what the engine does.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (
    binary_launcher,
    engine_env,
    run_preflight,
)

from .conftest import free_port, run_playbook
from .test_plan_module_real import base_args, plan_task

# Arguments the planner and its flag table pass (a known flag, a well-formed value) that the engine refuses
# while parsing them, with the line each generation prints.
ENGINE_ONLY_REFUSALS = [
    pytest.param(
        ["--chat-template-file", "/nonexistent/tpl.jinja"],
        "error while handling argument \"--chat-template-file\": error: failed to open file '/nonexistent/tpl.jinja'",
        id="template-file-missing",
    ),
    pytest.param(["-dev", "NoSuch0"], 'error while handling argument "-dev": invalid device: NoSuch0',
                 id="unknown-device"),
]


def _preflight(engine: str, model: str, argv: list[str], env: dict | None = None, cache: Path | None = None):
    launcher = binary_launcher(engine, engine_env(engine, env or {}))
    return run_preflight(launcher, [engine, "-m", model, *argv], (), cache_dir=str(cache) if cache else None)


@pytest.mark.parametrize("generation", ["engine_bin", "old_engine_bin"])
@pytest.mark.parametrize(("argv", "words"), ENGINE_ONLY_REFUSALS)
def test_the_engine_refuses_in_its_own_words(request, model_path, generation, argv, words):
    engine = request.getfixturevalue(generation)
    result = _preflight(engine, model_path, argv)
    assert result.passed is False
    assert result.engine_says == words


@pytest.mark.parametrize("generation", ["engine_bin", "old_engine_bin"])
@pytest.mark.parametrize(
    ("case", "words"),
    [
        ((["-c", "abc"], {}), 'error while handling argument "-c": stoi'),
        ((["-ctk", "q9_9"], {}), 'error while handling argument "-ctk": Unsupported cache type: q9_9'),
        ((["--no-such-flag"], {}), "error: invalid argument: --no-such-flag"),
        (([], {"LLAMA_ARG_THREADS": "x"}), 'error while handling environment variable "LLAMA_ARG_THREADS": stoi'),
    ],
)
def test_what_the_planner_refuses_first_the_engine_refuses_too(request, model_path, generation, case, words):
    """The preflight's verdicts on what the typed preset and the flag table already stop: the same gate twice."""
    engine = request.getfixturevalue(generation)
    result = _preflight(engine, model_path, *case)
    assert result.passed is False
    assert result.engine_says.startswith(words.split(":")[0])
    assert words.split(": ")[-1] in result.engine_says


@pytest.mark.parametrize("generation", ["engine_bin", "old_engine_bin"])
def test_a_good_command_line_passes_once_then_from_the_cache(request, model_path, generation, tmp_path):
    engine = request.getfixturevalue(generation)
    first = _preflight(engine, model_path, ["-c", "4096", "--port", "8081"], cache=tmp_path)
    again = _preflight(engine, model_path, ["-c", "4096", "--port", "8081"], cache=tmp_path)
    assert (first.passed, first.runs) == (True, 1)
    assert (again.passed, again.runs) == (True, 0)


def test_the_module_fails_quoting_the_engine_in_check_mode_too(tmp_path, engine_bin, model_path):
    args = base_args(tmp_path, engine_bin, model_path, PORT=free_port(),
                     EXTRA_ARGS="--chat-template-file /nonexistent/tpl.jinja")
    words = ENGINE_ONLY_REFUSALS[0].values[1]
    for check in (False, True):
        task = plan_task("Plan", args)
        if check:
            task = task.replace("  register:", "  check_mode: true\n  register:")
        proc = run_playbook(tmp_path, task)[0]
        assert proc.returncode == 2, proc.stdout
        assert "the engine refused the planned command line" in proc.stdout
        assert words.replace('"', '\\"') in proc.stdout or words in proc.stdout


def test_a_bad_service_variable_fails_before_the_engine_runs(tmp_path, engine_bin, model_path):
    args = base_args(tmp_path, engine_bin, model_path, PORT=free_port())
    args["environment"] = {"LLAMA_ARG_THREADS": "x"}
    proc = run_playbook(tmp_path, plan_task("Plan", args))[0]
    assert proc.returncode == 2
    assert "LLAMA_ARG_THREADS='x' (environment, --threads): 'x' is not an integer" in proc.stdout


def _run_engine(engine: str, args: list[str], env: dict) -> subprocess.CompletedProcess:
    full = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(Path(engine).parent), **env}
    return subprocess.run([engine, *args], env=full, capture_output=True, text=True, timeout=60, check=False)


def test_a_planted_user_config_ini_takes_no_part(tmp_path, engine_bin, model_path):
    home = tmp_path / "planted-home"
    (home / ".config" / "llama.cpp").mkdir(parents=True)
    (home / ".config" / "llama.cpp" / "config.ini").write_text("ctx-size = abc\n")
    # The plant bites: the engine alone reads it, and exits, where the same command with a clean home does not.
    # (What it says varies: its log thread may not get to print the file's name before the exit.)
    alone = _run_engine(engine_bin, ["--help", "-m", model_path], {"HOME": str(home)})
    assert alone.returncode == 1, alone.stdout[-500:]
    (tmp_path / "clean-home").mkdir()
    clean = _run_engine(engine_bin, ["--help", "-m", model_path], {"HOME": str(tmp_path / "clean-home")})
    assert clean.returncode == 0, clean.stdout[-500:] + clean.stderr[-500:]
    # Through the module, with that HOME in the service's environment: the preflight never reads it.
    args = base_args(tmp_path, engine_bin, model_path, PORT=free_port())
    args["environment"] = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    proc, result = run_playbook(tmp_path, plan_task("Plan", args))
    assert proc.returncode == 0, proc.stdout
    assert result["preflight"]["passed"] is True
    assert result["preflight"]["system_config"] == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="hiding /etc/llama.cpp needs root (CI runs as root)")
def test_a_planted_system_config_ini_is_hidden_from_the_preflight(tmp_path, engine_bin, model_path):
    directory = Path("/etc/llama.cpp")
    if directory.exists():
        pytest.fail("/etc/llama.cpp exists on this machine already: this test plants and removes its own")
    directory.mkdir()
    try:
        (directory / "config.ini").write_text("ctx-size = abc\n")
        alone = _run_engine(engine_bin, ["--help", "-m", model_path], {})
        assert alone.returncode == 1  # the plant bites
        args = base_args(tmp_path, engine_bin, model_path, PORT=free_port())
        proc, result = run_playbook(tmp_path, plan_task("Plan", args))
        assert proc.returncode == 0, proc.stdout
        assert result["preflight"] == {"passed": True, "runs": 1, "engine_says": "", "system_config": "hidden"}
        assert "/etc/llama.cpp/config.ini exists on this host" in proc.stdout + proc.stderr
        # The planner's view of the host is reported too.
        assert json.dumps(result["facts"]["preflight"]) == json.dumps(result["preflight"])
    finally:
        (directory / "config.ini").unlink(missing_ok=True)
        directory.rmdir()
