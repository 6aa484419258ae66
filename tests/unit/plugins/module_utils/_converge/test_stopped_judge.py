"""The judge of an instance in state stopped (instance.judge_stopped, host_judge.judge's ``stopped``): current only
when its service is stopped and does not start at boot, on the systemd stand-in (tests/unit/support)."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import host_judge, instance
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import UnitState
from tests.unit.support.instance_host import Systemd, settings_for

RUNNING = UnitState(load_state="loaded", active_state="active", sub_state="running", main_pid=42,
                    unit_file_state="enabled")


@pytest.fixture
def systemd(tmp_path, monkeypatch):
    return Systemd(tmp_path, monkeypatch)


@pytest.mark.parametrize(("state", "why"), [
    pytest.param(RUNNING, "instance main is to be stopped but it runs", id="running"),
    pytest.param(dataclasses.replace(RUNNING, unit_file_state="disabled"), "instance main is to be stopped but it runs",
                 id="running-though-disabled"),
    pytest.param(dataclasses.replace(RUNNING, active_state="activating", sub_state="auto-restart", main_pid=0),
                 "instance main is to be stopped but it runs", id="restarting"),
    pytest.param(dataclasses.replace(RUNNING, active_state="inactive", sub_state="dead", main_pid=0),
                 "instance main is to be stopped but its service starts at boot", id="stopped-but-enabled"),
    pytest.param(dataclasses.replace(RUNNING, active_state="inactive", sub_state="dead", main_pid=0,
                                     unit_file_state="disabled"), "", id="stopped-and-disabled"),
    pytest.param(dataclasses.replace(RUNNING, active_state="failed", sub_state="failed", main_pid=0,
                                     unit_file_state="disabled"), "", id="failed-and-disabled"),
    pytest.param(UnitState(load_state="not-found", active_state="inactive", sub_state="dead"), "",
                 id="never-deployed"),
])
def test_a_stopped_instance_is_current_only_when_it_neither_runs_nor_starts_at_boot(systemd, tmp_path, state, why):
    systemd.state = state
    entry, problem = instance.judge_stopped("main", settings_for(tmp_path), systemd.run, systemd.run)
    assert problem == why
    if why:
        assert entry is None
    else:
        assert entry == {"instance": "main", "unit": "llama-server-main.service", "state": "stopped",
                         "changed": False, "restarted": False}


def test_the_host_judge_names_a_stopped_instance_that_runs_as_work(systemd, tmp_path, monkeypatch):
    # The shared parts are judged elsewhere (their own tests): here they are in place.
    monkeypatch.setattr(host_judge, "shared_problems", lambda params, run, docker_run: ("", [], []))
    params = {"instances": [], "keys": {}, "absent": [], "stopped": ["main"], "settings": settings_for(tmp_path),
              "unit_dir": str(tmp_path / "units"), "lock_path": str(tmp_path / "lock"), "placement": None}
    systemd.state = RUNNING
    found = host_judge.judge(params, systemd.run, systemd.run)
    assert (found["current"], found["why"], found["work"]) == (
        False, ["instance main is to be stopped but it runs"], {"all": False, "instances": ["main"]})
    systemd.state = UnitState(load_state="loaded", active_state="inactive", sub_state="dead",
                              unit_file_state="disabled")
    found = host_judge.judge(params, systemd.run, systemd.run)
    assert (found["current"], found["report"]) == (True, [{"instance": "main", "unit": "llama-server-main.service",
                                                           "state": "stopped", "changed": False, "restarted": False}])


@pytest.mark.parametrize(("running", "expected"), [
    # expected: (current, the report's instances, the kept rows' instances, work.instances)
    pytest.param([], (True, ["a", "b"], ["a", "b"], []), id="both-current"),
    pytest.param(["b"], (False, [], ["a"], ["b"]), id="one-runs"),
    pytest.param(["a", "b"], (False, [], [], ["a", "b"]), id="both-run"),
])
def test_the_judge_keeps_the_rows_of_what_it_leaves(tmp_path, monkeypatch, running, expected):
    # The role steps only the instances of work.instances after its own judge, its report starting with ``kept``.
    monkeypatch.setattr(host_judge, "shared_problems", lambda params, run, docker_run: ("", [], []))

    def judge_stopped(name, settings, run, docker_run, unit_dir):
        if name in running:
            return None, f"instance {name} is to be stopped but it runs"
        return {"instance": name, "state": "stopped"}, ""

    monkeypatch.setattr(instance, "judge_stopped", judge_stopped)
    params = {"instances": [], "keys": {}, "absent": [], "stopped": ["a", "b"], "settings": settings_for(tmp_path),
              "unit_dir": str(tmp_path / "units"), "lock_path": str(tmp_path / "lock"), "placement": None}
    found = host_judge.judge(params, None, None)
    assert (found["current"], [row["instance"] for row in found["report"]],
            [row["instance"] for row in found["kept"]], found["work"]["instances"]) == expected
    assert found["work"]["all"] is False
