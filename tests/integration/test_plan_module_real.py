"""llama_server_plan through Ansible on localhost, against the real engine and the real Gemma file.

The argv the module returns is executed: llama-server must answer /health 200
and /completion must return text. A second run must not execute the engine.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

from .conftest import free_port, run_playbook

SECRET = "lf-test-key-5f2a9c0e7b"


def plan_task(name: str, args: dict) -> str:
    return (
        f"- name: {name}\n"
        f"  llamafleet.llamacpp.llama_server_plan: {json.dumps(args)}\n"
        f"  register: results\n"
    )


def base_args(tmp_path: Path, engine_bin: str, model_path: str, **preset) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "bin": engine_bin,
        "home": str(home),
        "model_dirs": [str(Path(model_path).parent)],
        "preset": {"MODEL": Path(model_path).name, "HOST": "127.0.0.1", **preset},
    }


def test_planned_argv_serves_completions(tmp_path, engine_bin, model_path, start_server):
    port = free_port()
    args = base_args(tmp_path, engine_bin, model_path, PORT=port, CTX=2048, NGL=999, THREADS=2)
    proc, result = run_playbook(tmp_path, plan_task("Plan", args))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argv = result["argv"]
    assert argv[:3] == [engine_bin, "-m", model_path]
    # This CPU engine has --load-mode: NGL=999 becomes -ngl auto, with the note that says so.
    assert argv[argv.index("-ngl") + 1] == "auto"
    assert "ngl.sentinel_auto" in [n["id"] for n in result["notes"]]
    assert result["facts"]["gguf"]["arch"] == "gemma3"
    assert result["exec_start"].startswith(engine_bin + " -m ")
    # What the launch needs: the whole model, its KV cache and the compute buffer, all on this CPU host.
    memory = result["memory"]
    assert memory["known"] is True
    assert [device["device"] for device in memory["devices"]] == ["host"]
    assert memory["host_mib"] > os.path.getsize(model_path) >> 20
    assert memory["devices"][0]["context_mib"] > 0

    server = start_server(argv, result["env"])
    assert server.wait_healthy() == 200
    answer = server.complete("The capital of France is")
    assert isinstance(answer["content"], str)
    assert answer["content"].strip() != ""
    assert answer["tokens_predicted"] > 0


def test_config_env_preset_file(tmp_path, engine_bin, model_path, start_server):
    port = free_port()
    preset_file = tmp_path / "config.env"
    preset_file.write_text(
        "# NAME=gemma drop-in Loki preset\n"
        f"export MODEL='{Path(model_path).name}'\n"
        "HOST=127.0.0.1\n"
        f"PORT={port}\n"
        "CTX=4096\n"
        'EXTRA_ARGS=--jinja --mlock -n 32 --alias "gemma test"\n'
        "REASONING=off\n"
        "TEMP=0.7\n"
    )
    args = {
        "bin": engine_bin,
        "home": str(tmp_path / "home"),
        "model_dirs": [str(Path(model_path).parent)],
        "preset_file": str(preset_file),
    }
    (tmp_path / "home").mkdir()
    proc, result = run_playbook(tmp_path, plan_task("Plan from config.env", args))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argv = result["argv"]
    # Old --mlock becomes --load-mode mmap+mlock on this engine; the quoted alias stays one word.
    assert argv[-2:] == ["--load-mode", "mmap+mlock"]
    assert argv[argv.index("--alias") + 1] == "gemma test"
    assert argv[argv.index("--reasoning") + 1] == "off"
    assert "TEMP" not in " ".join(argv)
    server = start_server(argv, result["env"])
    assert server.wait_healthy() == 200
    assert server.complete("Hello", n_predict=8)["content"].strip() != ""


def _counting_wrapper(tmp_path: Path, engine_bin: str) -> tuple[Path, Path]:
    """A llama-server stand-in that counts its executions, then runs the real engine."""
    counter = tmp_path / "engine-runs.log"
    wrapper_dir = tmp_path / "wrapped-bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "llama-server"
    real_dir = str(Path(engine_bin).parent)
    wrapper.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {counter}\n'
        f'LD_LIBRARY_PATH="{real_dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" exec {engine_bin} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return wrapper, counter


def test_second_run_executes_the_engine_zero_times(tmp_path, engine_bin, model_path):
    wrapper, counter = _counting_wrapper(tmp_path, engine_bin)
    # SPEC=auto makes the module want --version as well as --help.
    args = base_args(tmp_path, str(wrapper), model_path, PORT=free_port(), SPEC="auto")
    first, first_result = run_playbook(tmp_path, plan_task("First plan", args))
    assert first.returncode == 0, first.stdout + first.stderr
    runs_after_first = counter.read_text().splitlines()
    # --help and --version, then the preflight: the planned arguments after --help.
    assert runs_after_first[:2] == ["--help", "--version"]
    # The slot directory exists only once the service has started: a throwaway one stands in for it.
    slot_dir = first_result["decisions"]["slot_dir"]
    assert slot_dir
    preflight_words = runs_after_first[2].split(" ")
    planned_words = first_result["argv"][1:]
    swapped = planned_words.index(slot_dir)
    assert preflight_words[0] == "--help"
    assert preflight_words[1:swapped + 1] + preflight_words[swapped + 2:] == planned_words[:swapped] + planned_words[
        swapped + 1:]
    assert "llamafleet-preflight-" in preflight_words[swapped + 1]
    assert first_result["engine_runs"] == 3
    assert first_result["preflight"] == {"passed": True, "runs": 1, "engine_says": "", "system_config": ""}

    second, second_result = run_playbook(tmp_path, plan_task("Second plan", args))
    assert second.returncode == 0, second.stdout + second.stderr
    assert counter.read_text().splitlines() == runs_after_first  # not executed again
    assert second_result["engine_runs"] == 0
    assert second_result["preflight"]["runs"] == 0
    assert second_result["argv"] == first_result["argv"]

    # A new binary (same path, new identity) is asked again.
    os.utime(wrapper, ns=(1_000_000_000, 1_000_000_000))
    third, third_result = run_playbook(tmp_path, plan_task("After binary change", args))
    assert third.returncode == 0, third.stdout + third.stderr
    assert third_result["engine_runs"] == 3


def test_api_key_never_in_arguments_results_or_output(tmp_path, engine_bin, model_path, start_server):
    key_file = tmp_path / "api_key"
    key_file.write_text(SECRET)
    key_file.chmod(0o600)
    args = base_args(tmp_path, engine_bin, model_path, PORT=free_port(), API_KEY=SECRET)
    args["api_key_file"] = str(key_file)
    proc, result = run_playbook(tmp_path, plan_task("Plan with a key", args), verbosity=3)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert SECRET not in proc.stdout
    assert SECRET not in proc.stderr
    assert SECRET not in json.dumps(result)
    argv = result["argv"]
    assert "--api-key" not in argv
    assert argv[argv.index("--api-key-file") + 1] == str(key_file)
    server = start_server(argv, result["env"])
    assert server.wait_healthy() == 200
    try:
        server.complete("Hi", n_predict=2)
        unauthorised = 200
    except urllib.error.HTTPError as err:
        unauthorised = err.code
    assert unauthorised == 401
    assert server.complete("Hi", n_predict=2, headers={"Authorization": f"Bearer {SECRET}"})["content"] is not None


def test_missing_model_fails_clearly(tmp_path, engine_bin, model_path):
    args = base_args(tmp_path, engine_bin, model_path)
    args["preset"]["MODEL"] = "no-such-model.gguf"
    proc = run_playbook(tmp_path, plan_task("Plan a missing model", args))[0]
    assert proc.returncode != 0
    assert "model not found" in proc.stdout


def test_bad_preset_type_fails_naming_the_key(tmp_path, engine_bin, model_path):
    args = base_args(tmp_path, engine_bin, model_path)
    args["preset"]["EXTRA_ARGS"] = ["--jinja"]
    proc = run_playbook(tmp_path, plan_task("Plan a list value", args))[0]
    assert proc.returncode != 0
    assert "EXTRA_ARGS" in proc.stdout


def test_check_mode_writes_no_cache(tmp_path, engine_bin, model_path):
    args = base_args(tmp_path, engine_bin, model_path, PORT=free_port())
    cache_dir = tmp_path / "engine-cache"
    args["cache_dir"] = str(cache_dir)
    task = plan_task("Plan in check mode", args).replace("  register:", "  check_mode: true\n  register:")
    proc, result = run_playbook(tmp_path, task)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["changed"] is False
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_host_facts_plan_without_probing(tmp_path):
    args = {
        "preset": {"CTX": 8192, "SIDE_SLOT": True, "DESCRIPTION": "a note for people"},
        "host_facts": {
            "bin": "/opt/llama/bin/llama-server",
            "model": "/srv/models/m.gguf",
            "help": "--no-kv-unified --load-mode",
            "vram_mib": 24576,
            "model_bytes": 4 << 30,
            "gguf": {"arch": "llama", "block_count": 32, "key_len": 128, "val_len": 128, "head_count_kv": 8},
        },
    }
    proc, result = run_playbook(tmp_path, plan_task("Preview", args))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # YAML true became "on": the side slot is accepted and the context doubled.
    argv = result["argv"]
    assert argv[argv.index("-c") + 1] == "16384"
    assert argv[argv.index("--parallel") : argv.index("--parallel") + 3] == ["--parallel", "2", "--no-kv-unified"]
    assert [n["id"] for n in result["notes"]] == ["preset.unknown_key", "side.accepted"]
    assert result["facts"] == {"source": "host_facts"}
    assert result["preflight"] is None  # nothing to start: no engine was probed
    assert result["plan_warnings"] == []


def test_a_typo_of_a_preset_key_fails_naming_the_key_it_resembles(tmp_path):
    args = {"preset": {"NLG": 99}, "host_facts": {"bin": "/b", "model": "/m.gguf"}}
    proc = run_playbook(tmp_path, plan_task("Typo", args))[0]
    assert proc.returncode != 0
    assert "preset key NLG is not a Loki key; did you mean NGL?" in proc.stdout


def test_host_facts_with_an_unknown_field_fails(tmp_path):
    args = {"preset": {}, "host_facts": {"bin": "/b", "model": "/m.gguf", "vram": 1}}
    proc = run_playbook(tmp_path, plan_task("Bad facts", args))[0]
    assert proc.returncode != 0
    assert "unknown field(s) vram" in proc.stdout


def test_foreign_process_on_the_port_is_named(tmp_path, engine_bin, model_path):
    port = free_port()
    listener = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import socket,time; s=socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); time.sleep(120)",
        ],
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        args = base_args(tmp_path, engine_bin, model_path, PORT=port)
        proc = run_playbook(tmp_path, plan_task("Plan on a busy port", args))[0]
        assert proc.returncode != 0
        assert f"port {port} is already in use by pid {listener.pid}" in proc.stdout
        args["check_port"] = False
        proc, result = run_playbook(tmp_path, plan_task("Plan without the port check", args))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert result["port_conflict"] == ""
    finally:
        listener.kill()
        listener.wait()
