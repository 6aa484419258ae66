"""The host judge on the target, in-process: every shared part the role would change is named, and an instance
is current only when its files, its unit and what runs are the plan's. The plan itself is a recorded result (the
planner has its own tests); systemd and the engine are stood in for as in the apply module's tests, and the
molecule scenarios run the judge on real hosts."""

import grp
import json
import os
import pwd
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.running_state import UnitState
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import instance as converge
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.model_markers import (
    identity,
    marker_path,
    write_marker,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_request import PlanOutcome
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_judge as judge_module
from tests.unit.support.module_runner import run_module

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name
KEY = "k-judge-secret"
ARGV = ["/e/llama-server", "-m", "/m/a.gguf", "-c", "4096", "--port", "8080", "--api-key-file",
        "/run/credentials/llama-server-main.service/api_key"]
PLAN = {
    "argv": ARGV, "exec_start": " ".join(ARGV), "env": {}, "notes": [], "plan_warnings": [], "refusal": None,
    "external": False, "api_key_via_env": False, "unset_environment": [],
    "decisions": {"host": "127.0.0.1", "port": "8080", "loopback_only": True, "slot_dir": "",
                  "slot_persist": False, "health_url": "http://127.0.0.1:8080/health", "health_unix_socket": "",
                  "expect": {"ctx": 4096, "slots": 1, "model_path": "/m/a.gguf"}},
    "facts": {"model": "/m/a.gguf", "model_bytes": 1000, "ram_avail_mib": 100, "gpus": []},
}


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host whose shared parts are in place, with a stand-in systemd running whatever was last applied."""
    home = tmp_path / "home"
    for path in (home, home / "instances", tmp_path / "models", tmp_path / "etc", tmp_path / "etc" / "cred"):
        path.mkdir(parents=True)
        path.chmod(0o750)
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "llamafleet-runtime.json").write_text(json.dumps({"packages": ["gguf"]}))
    engine = tmp_path / "llama-server"
    engine.write_text("#!/bin/sh\n")
    engine.chmod(0o755)
    model = tmp_path / "models" / "a.gguf"
    model.write_bytes(b"GGUF")
    write_marker(marker_path(str(tmp_path / "models" / ".m"), str(model), "sha256:ab"), "sha256:ab",
                 identity(os.stat(model)))
    state = {"unit": UnitState(load_state="not-found")}
    monkeypatch.setattr(converge, "unit_path", lambda name: str(tmp_path / f"llama-server-{name}.service"))
    monkeypatch.setattr(converge, "read_unit_state", lambda run, unit: state["unit"])
    monkeypatch.setattr(judge_module.host, "read_unit_state", lambda run, unit: UnitState(load_state="not-found"))
    monkeypatch.setattr(converge, "probe_http_get", lambda url, sock, timeout: (200, b""))
    monkeypatch.setattr(converge, "read_props", lambda url, sock, headers=None: {
        "default_generation_settings": {"n_ctx": 4096}, "total_slots": 1, "model_path": "/m/a.gguf"})
    monkeypatch.setattr(judge_module, "plan_from_params", lambda params, check_mode: PlanOutcome(dict(PLAN)))
    return {"tmp": tmp_path, "state": state, "engine": str(engine), "model": str(model)}


def args(host, **more):
    tmp = host["tmp"]
    base = {
        "instances": [{"name": "main", "preset": {"MODEL": "a.gguf"}, "environment": None}],
        "keys": {"main": KEY},
        "settings": {
            "home": str(tmp / "home"), "models_dir": str(tmp / "models"), "model_dirs": [],
            "config_dir": str(tmp / "etc"), "credentials_dir": str(tmp / "etc" / "cred"),
            "plan_cache_dir": str(tmp / "cache"), "user": ME, "group": MY_GROUP, "environment": {},
            "engine_official": False, "allow_open": False, "nvidia": "auto", "protect_home": "yes",
            "restart_sec": 5, "stop_timeout_s": 30, "limit_nofile": 65536, "health_timeout_base_s": 60,
            "health_timeout_per_gib_s": 20, "health_listen_timeout_s": 30, "health_delay_s": 2.0,
            "journal_lines": 40, "engine": "",
        },
        "account": {"user": ME, "group": MY_GROUP, **_account_of_me()},
        "directories": [{"path": str(tmp / "home"), "owner": ME, "group": MY_GROUP, "mode": "0750"}],
        "runtime": {"marker": str(tmp / "venv" / "llamafleet-runtime.json"), "manifest": {"packages": ["gguf"]}},
        "engine": {"bin": host["engine"], "marker": "", "checksum": ""},
        "models": [{"path": host["model"], "checksum": "sha256:ab"}],
        "models_marker_dir": str(tmp / "models" / ".m"),
        "unit_dir": str(tmp),
        "lock_path": str(tmp / "rollout.lock"),
    }
    base.update(more)
    return base


def _account_of_me() -> dict:
    entry = pwd.getpwuid(os.getuid())
    return {"home": entry.pw_dir, "shell": entry.pw_shell, "comment": entry.pw_gecos}


def apply_the_plan(host, capsys):
    """What llama_server_apply would leave: the judge's own request, applied through the apply step's code."""
    captured = {}
    real = converge.Instance.judge

    def keep(self):
        captured["instance"] = self
        return real(self)

    converge.Instance.judge = keep
    try:
        run_module(judge_module.main, args(host), capsys)
    finally:
        converge.Instance.judge = real
    target = captured["instance"]
    target.write_files()
    os.makedirs(target.params["home_dir"], mode=0o700, exist_ok=True)
    os.chmod(target.params["home_dir"], 0o700)
    target.write_state()
    target.keep_last_good()
    host["state"]["unit"] = UnitState(load_state="loaded", active_state="active", sub_state="running",
                                      main_pid=42, unit_file_state="enabled", cmdline=tuple(ARGV), environ={
                                          "XDG_CONFIG_HOME": "/tmp/llamafleet-no-config"})


def test_a_new_host_is_not_current_and_says_why(host, capsys):
    result = run_module(judge_module.main, args(host), capsys)
    assert result["current"] is False
    assert result["why"] == ["instance main: would restart: the unit file changed"]
    assert KEY not in json.dumps(result)


def test_a_host_that_runs_its_plan_is_current_with_its_report(host, capsys):
    apply_the_plan(host, capsys)
    result = run_module(judge_module.main, args(host), capsys)
    assert (result["current"], result["why"]) == (True, [])
    [row] = result["report"]
    assert (row["state"], row["ctx"], row["changed"], row["restarted"], row["pid"]) == ("deployed", "4096",
                                                                                        False, False, 42)
    assert KEY not in json.dumps(result)


def test_an_engine_running_another_command_line_is_work(host, capsys):
    apply_the_plan(host, capsys)
    other = [*ARGV[:4], "2048", *ARGV[5:]]
    host["state"]["unit"] = UnitState(load_state="loaded", active_state="active", sub_state="running", main_pid=42,
                                      unit_file_state="enabled", cmdline=tuple(other), environ={})
    result = run_module(judge_module.main, args(host), capsys)
    assert result["current"] is False
    assert "command line is not the plan's" in result["why"][0]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda h, a: a["account"].update(user="nobody-such-user"), "the service user nobody-such-user does not"),
        (lambda h, a: a["account"].update(group="nogroup-such"), "the service group nogroup-such does not exist"),
        (lambda h, a: a["account"].update(shell="/bin/false-x"), "the service user's shell differs"),
        (lambda h, a: a["directories"][0].update(mode="0700"), "is not a directory with owner"),
        (lambda h, a: a["directories"].append({"path": str(h["tmp"] / "nope"), "owner": ME, "group": MY_GROUP,
                                               "mode": "0750"}), "nope is missing"),
        (lambda h, a: a["runtime"].update(manifest={"packages": ["gguf", "x"]}), "the planning runtime is not"),
        (lambda h, a: a["engine"].update(bin=str(h["tmp"] / "missing")), "is not an executable file"),
        (lambda h, a: a["engine"].update(bin="", marker=str(h["tmp"] / "none.json"), checksum="sha256:1"),
         "the engine archive is not installed yet"),
        (lambda h, a: Path(h["model"]).write_bytes(b"GGUF+"), "model a.gguf: its size changed"),
        (lambda h, a: a.update(absent=["old"]) or (h["tmp"] / "llama-server-old.service").write_text("x"),
         "instance old is to be absent but"),
    ],
    ids=["user", "group", "shell", "directory mode", "directory missing", "runtime", "engine bin",
         "engine archive", "model", "absent"],
)
def test_each_shared_part_the_role_would_change_is_named(host, capsys, change, expected):
    apply_the_plan(host, capsys)
    given = args(host)
    change(host, given)
    result = run_module(judge_module.main, given, capsys)
    assert result["current"] is False
    assert any(expected in why for why in result["why"]), result["why"]
    assert result["report"] == []


def test_a_failing_plan_or_an_open_server_is_work_not_a_failure(host, capsys, monkeypatch):
    monkeypatch.setattr(judge_module, "plan_from_params",
                        lambda params, check_mode: PlanOutcome({}, failure="KV_TYPE='q9' is not valid\nmore"))
    result = run_module(judge_module.main, args(host), capsys)
    assert (result.get("failed"), result["current"]) == (None, False)
    assert result["why"] == ["instance main: its plan fails (KV_TYPE='q9' is not valid)"]
    open_plan = {**PLAN, "decisions": {**PLAN["decisions"], "loopback_only": False, "host": "0.0.0.0"}}
    monkeypatch.setattr(judge_module, "plan_from_params", lambda params, check_mode: PlanOutcome(open_plan))
    result = run_module(judge_module.main, args(host, keys={}), capsys)
    assert result["why"] == ["instance main: its plan is refused (open server)"]


def test_the_lock_holder_is_returned(host, capsys):
    (host["tmp"] / "rollout.lock").write_text(json.dumps({"controller": "c", "pid": 1}))
    result = run_module(judge_module.main, args(host), capsys)
    assert result["lock_holder"] == {"controller": "c", "pid": 1}
