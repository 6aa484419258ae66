"""The host judge on the target, in-process: every shared part the role would change is named, and an instance
is current only when its files, its service and what runs are the plan's, judged by the instance step's own code,
for both runtimes. The planner, systemd and docker are stood in for (tests/unit/support); the molecule scenarios
run the judge on real hosts."""

import json
import os
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import host_judge, instance
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.models import write_marker
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.model_markers import identity, marker_path
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import UnitState
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_judge as judge_module
from tests.unit.support.instance_host import ME, MY_GROUP, Docker, Systemd, settings_for
from tests.unit.support.module_runner import run_module

KEY = "k-judge-secret"


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host whose shared parts are in place, with a stand-in systemd running whatever was last applied."""
    for path in (tmp_path / "home", tmp_path / "home" / "instances", tmp_path / "models"):
        path.mkdir(parents=True)
        path.chmod(0o750)
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "llamafleet-runtime.json").write_text(json.dumps({"packages": ["gguf"]}))
    engine = tmp_path / "llama-server"
    engine.write_text("#!/bin/sh\n")
    engine.chmod(0o755)
    model = tmp_path / "models" / "a.gguf"
    model.write_bytes(b"GGUF")
    write_marker(marker_path(str(tmp_path / "models" / ".llamafleet"), str(model), "sha256:ab"), "sha256:ab",
                 identity(os.stat(model)))
    systemd = Systemd(tmp_path, monkeypatch)
    monkeypatch.setattr(judge_module.AnsibleModule, "run_command", systemd.run)
    monkeypatch.setattr(host_judge.host, "read_unit_state",
                        lambda run, unit: systemd.state if unit == "llama-server-main.service"
                        else UnitState(load_state="not-found"))
    return {"tmp": tmp_path, "systemd": systemd, "engine": str(engine), "model": str(model)}


def args(host, **more):
    tmp = host["tmp"]
    base = {
        "instances": [{"name": "main", "preset": {"CTX": "4096"}, "environment": None}],
        "keys": {"main": KEY},
        "settings": settings_for(tmp),
        "account": {"user": ME, "group": MY_GROUP, **_account_of_me()},
        "directories": [{"path": str(tmp / "home"), "owner": ME, "group": MY_GROUP, "mode": "0750"}],
        "planning_venv": {"marker": str(tmp / "venv" / "llamafleet-runtime.json"), "manifest": {"packages": ["gguf"]}},
        "engine": {"bin": host["engine"], "marker": "", "checksum": ""},
        "models": [{"path": host["model"], "checksum": "sha256:ab"}],
        "unit_dir": str(tmp),
        "lock_path": str(tmp / "rollout.lock"),
    }
    base.update(more)
    return base


def _account_of_me() -> dict:
    import pwd  # noqa: PLC0415

    entry = pwd.getpwuid(os.getuid())
    return {"home": entry.pw_dir, "shell": entry.pw_shell, "comment": entry.pw_gecos}


def apply_the_plan(host, preset=None):
    """What llama_server_apply leaves: the instance step run on the same stand-in host."""
    params = {"name": "main", "preset": preset or {"CTX": "4096"}, "engine": host["engine"], "api_key": KEY,
              "settings": settings_for(host["tmp"])}
    outcome = instance.apply(params, host["systemd"].run, host["systemd"].run, check_mode=False, diff=False)
    assert outcome.failure == ""


def test_a_new_host_is_not_current_and_says_why(host, capsys):
    result = run_module(judge_module.main, args(host), capsys)
    assert result["current"] is False
    assert result["why"] == ["instance main: would restart: the unit file changed"]
    assert result["engine"] == host["engine"]
    assert KEY not in json.dumps(result)


def test_a_host_that_runs_its_plan_is_current_with_its_report(host, capsys):
    apply_the_plan(host)
    result = run_module(judge_module.main, args(host), capsys)
    assert (result["current"], result["why"]) == (True, [])
    [row] = result["report"]
    assert (row["state"], row["ctx"], row["changed"], row["restarted"], row["pid"]) == ("deployed", "4096",
                                                                                        False, False, 100)
    assert KEY not in json.dumps(result)


def test_comments_that_differ_are_work_without_a_restart(host, capsys):
    apply_the_plan(host, {"CTX": "4096", "NOTE": "old words"})
    result = run_module(judge_module.main, args(host), capsys)
    assert result["why"] == ["instance main: the unit file differs in its comments only (rewritten without a "
                             "restart)"]


def test_an_engine_running_another_command_line_is_work(host, capsys):
    apply_the_plan(host)
    host["systemd"].run_engine(["/x/llama-server", "-m", "/m/a.gguf", "-c", "2048"])
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
        (lambda h, a: a["planning_venv"].update(manifest={"packages": ["gguf", "x"]}), "the planning runtime is not"),
        (lambda h, a: a["engine"].update(bin=str(h["tmp"] / "missing")), "is not an executable file"),
        (lambda h, a: a["engine"].update(bin="", marker=str(h["tmp"] / "none.json"), checksum="sha256:1"),
         "the engine archive is not installed yet"),
        (lambda h, a: Path(h["model"]).write_bytes(b"GGUF+"), "model a.gguf: its size changed"),
        (lambda h, a: a.update(absent=["old"]) or (h["tmp"] / "old.service").write_text("x"),
         "instance old is to be absent but"),
    ],
    ids=["user", "group", "shell", "directory mode", "directory missing", "runtime", "engine bin",
         "engine archive", "model", "absent"],
)
def test_each_shared_part_the_role_would_change_is_named(host, capsys, change, expected, monkeypatch):
    apply_the_plan(host)
    monkeypatch.setattr(host_judge, "unit_path", lambda name, unit_dir: str(host["tmp"] / f"{name}.service"))
    given = args(host)
    change(host, given)
    result = run_module(judge_module.main, given, capsys)
    assert result["current"] is False
    assert any(expected in why for why in result["why"]), result["why"]
    assert result["report"] == []


def test_a_failing_plan_or_an_open_server_is_work_not_a_failure(host, capsys, monkeypatch):
    from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import step  # noqa: PLC0415
    from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.planning import (  # noqa: PLC0415
        PlanOutcome,
    )

    monkeypatch.setattr(step, "plan_launch",
                        lambda options, **_kwargs: PlanOutcome({}, failure="KV_TYPE='q9' is not valid\nmore"))
    result = run_module(judge_module.main, args(host), capsys)
    assert (result.get("failed"), result["current"]) == (None, False)
    assert result["why"] == ["instance main: it cannot be deployed as planned (KV_TYPE='q9' is not valid)"]


def test_the_lock_holder_is_returned(host, capsys):
    (host["tmp"] / "rollout.lock").write_text(json.dumps({"controller": "c", "pid": 1}))
    result = run_module(judge_module.main, args(host), capsys)
    assert result["lock_holder"] == {"controller": "c", "pid": 1}


def test_a_compose_host_is_judged_by_the_same_step(tmp_path, capsys, monkeypatch):
    """The compose runtime's host judge: the image, then the instance as its container runs it."""
    for path in (tmp_path / "home", tmp_path / "models"):
        path.mkdir(parents=True)
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "llamafleet-runtime.json").write_text("{}")
    docker = Docker(tmp_path, monkeypatch)
    monkeypatch.setattr(judge_module.AnsibleModule, "run_command", docker.run)
    settings = settings_for(tmp_path, runtime="compose", image=Docker.IMAGE)
    given = {"instances": [{"name": "main", "preset": {"CTX": "4096"}}], "keys": {"main": KEY},
             "settings": settings, "account": {"user": ME, "group": MY_GROUP, **_account_of_me()},
             "planning_venv": {"marker": str(tmp_path / "venv" / "llamafleet-runtime.json"), "manifest": {}},
             "lock_path": str(tmp_path / "rollout.lock")}
    new = run_module(judge_module.main, given, capsys)
    assert new["why"] == ["instance main: would restart: the compose file changed"]
    params = {"name": "main", "preset": {"CTX": "4096"}, "api_key": KEY, "settings": settings}
    assert instance.apply(params, docker.run, docker.run, check_mode=False, diff=False).failure == ""
    docker.calls.clear()
    current = run_module(judge_module.main, given, capsys)
    assert (current["current"], current["engine"], current["report"][0]["unit"]) == (
        True, "/app/llama-server", "llama-server-main")
    assert "compose up" not in docker.verbs()
    assert "compose config" not in docker.verbs()
    docker.image_id = "sha256:2222"  # a new image under the same name: its containers are recreated
    assert run_module(judge_module.main, given, capsys)["why"] == [
        "instance main: would restart: the compose file changed"]
    gone = run_module(judge_module.main, {**given, "settings": {**settings, "image": "llama:missing"}}, capsys)
    assert gone["why"] == ["the image llama:missing is not on this host yet"]
