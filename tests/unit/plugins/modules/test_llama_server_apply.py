"""llama_server_apply: the instance step through the module, on a stand-in systemd host (tests/unit/support).

Each branch of the step: a first deployment and a no-op, a running engine that is not the plan, a change of
comments only (written, nothing restarted), a failed start rolled back or a new instance removed, check and diff
mode, an open server refused, state absent; and the key in no result.
"""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_apply as apply
from tests.unit.support.instance_host import ENGINE, Systemd, preset, settings_for
from tests.unit.support.module_runner import run_module

KEY = "k-apply-secret"


@pytest.fixture
def systemd(tmp_path, monkeypatch):
    host = Systemd(tmp_path, monkeypatch)
    monkeypatch.setattr(apply.AnsibleModule, "run_command", host.run)
    return host


def args(tmp_path, ctx="4096", **more):
    return {"name": "main", "preset": preset(ctx), "engine": ENGINE, "api_key": KEY,
            "settings": settings_for(tmp_path), **more}


def test_first_deployment_then_a_no_op(systemd, tmp_path, capsys):
    first = run_module(apply.main, args(tmp_path), capsys)
    assert (first["state"], first["changed"], first["restarted"], first["runs_plan"]) == ("deployed", True, True, True)
    assert first["reasons"][-1] == "the unit is not loaded yet"
    assert systemd.verbs() == ["daemon-reload", "enable", "restart"]
    assert (tmp_path / "etc" / "cred" / "main.key").read_text() == KEY + "\n"
    assert (tmp_path / "etc" / "cred" / "main.key").stat().st_mode & 0o777 == 0o600
    assert len(list((tmp_path / "etc" / "last-good" / "main").iterdir())) == 2
    assert json.loads((tmp_path / "etc" / "instance-main.json").read_text()) == {"ram_avail_mib": 100}
    assert first["report"]["state"] == "deployed"
    assert first["report"]["ctx"] == "4096"
    systemd.calls.clear()
    again = run_module(apply.main, args(tmp_path), capsys)
    assert (again["changed"], again["restarted"], again["reasons"], systemd.verbs()) == (False, False, [], [])
    assert again["props"]["n_ctx"] == 4096
    assert KEY not in json.dumps(first) + json.dumps(again)


def test_an_engine_running_another_argv_is_restarted_though_the_files_are_right(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    systemd.run_engine([ENGINE, "-m", "/m/a.gguf", "-c", "2048"])  # an interrupted rollout: new file, old engine
    result = run_module(apply.main, args(tmp_path), capsys)
    assert result["restarted"] is True
    assert result["reasons"] == ["the running engine's command line is not the plan's: word 4 is '2048', the plan "
                                 "has '4096'"]


def test_a_change_of_comments_only_is_written_and_restarts_nothing(systemd, tmp_path, capsys):
    # "4k" is read as 4096: the same command line, and a note that says so in the unit's comments.
    run_module(apply.main, args(tmp_path, ctx="4k"), capsys)
    pid = systemd.state.main_pid
    before = systemd.unit_file.read_text()
    assert "# [preset.normalised] CTX=4k read as 4096" in before
    systemd.calls.clear()
    result = run_module(apply.main, args(tmp_path, ctx="4096"), capsys)
    assert (result["changed"], result["restarted"], result["reasons"]) == (True, False, [])
    assert result["rewritten"] == ["the unit file"]
    assert result["report"]["rewritten"] == ["the unit file"]
    assert systemd.verbs() == ["daemon-reload"]  # systemd's copy is fresh again; no restart
    assert systemd.state.main_pid == pid
    after = systemd.unit_file.read_text()
    assert after != before
    assert "preset.normalised" not in after
    # The verified copy follows, so the judge finds the host current afterwards.
    copy = (tmp_path / "etc" / "last-good" / "main" / str(systemd.unit_file).strip("/").replace("/", "%"))
    assert copy.read_text() == after
    assert run_module(apply.main, args(tmp_path, ctx="4096"), capsys)["changed"] is False


def test_a_changed_value_restarts(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    pid = systemd.state.main_pid
    result = run_module(apply.main, args(tmp_path, ctx="2048"), capsys)
    assert (result["restarted"], result["reasons"][0]) == (True, "the unit file changed")
    assert systemd.state.main_pid != pid


def test_a_failed_start_goes_back_to_the_last_verified_unit(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    verified = systemd.unit_file.read_text()
    systemd.crash_when = lambda argv: "1024" in argv
    result = run_module(apply.main, args(tmp_path, ctx="1024"), capsys)
    assert result["failed"] is True
    assert "rolled back to the last verified unit, which is healthy again" in result["msg"]
    assert "journalctl -u llama-server-main.service (last 2 lines since the restart):" in result["msg"]
    assert result["rolled_back"] is True
    assert result["report"]["state"] == "failed"
    assert systemd.unit_file.read_text() == verified
    assert systemd.state.running
    assert "4096" in systemd.state.cmdline


def test_a_new_instance_that_never_worked_is_removed(systemd, tmp_path, capsys):
    systemd.crash_when = lambda argv: True
    result = run_module(apply.main, args(tmp_path), capsys)
    assert result["failed"] is True
    assert "the new instance was removed" in result["msg"]
    assert not systemd.unit_file.exists()
    assert not (tmp_path / "etc" / "cred" / "main.key").exists()
    assert not (tmp_path / "etc" / "last-good" / "main").exists()
    assert systemd.verbs()[-3:] == ["disable", "daemon-reload", "reset-failed"]


def test_props_that_contradict_the_plan_roll_back(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    systemd.ctx_override = 512
    result = run_module(apply.main, args(tmp_path, ctx="2048"), capsys)
    assert result["failed"] is True
    assert "/props: n_ctx is 512 per slot" in result["msg"]


def test_check_mode_previews_and_changes_nothing(systemd, tmp_path, capsys):
    result = run_module(apply.main, args(tmp_path), capsys, check_mode=True, diff=True)
    assert (result["state"], result["would_restart"], result["restarted"]) == ("previewed", True, False)
    assert result["report"]["state"] == "previewed"
    assert "ExecStart=" in result["diff"]["after"]
    assert result["diff"]["before"] == ""
    assert not systemd.unit_file.exists()
    assert systemd.verbs() == []
    assert KEY not in json.dumps(result)


def test_an_open_server_without_a_key_is_refused_before_anything_changes(systemd, tmp_path, capsys):
    result = run_module(apply.main, args(tmp_path, api_key="", preset=preset(HOST="0.0.0.0")), capsys)
    assert result["failed"] is True
    assert "beyond loopback" in result["msg"]
    assert result["report"]["state"] == "failed"
    assert not systemd.unit_file.exists()


def test_state_absent_removes_the_instance(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    assert systemd.unit_file.exists()
    gone = run_module(apply.main, {"name": "main", "state": "absent", "settings": settings_for(tmp_path)}, capsys)
    assert gone["report"] == {"instance": "main", "unit": "llama-server-main.service", "state": "absent",
                              "changed": True, "restarted": False}
    assert not systemd.unit_file.exists()
    assert not (tmp_path / "etc" / "cred" / "main.key").exists()
    assert not (tmp_path / "home" / "instances" / "main").exists()
    assert "disable" in systemd.verbs()
    again = run_module(apply.main, {"name": "main", "state": "absent", "settings": settings_for(tmp_path)}, capsys)
    assert again["report"]["changed"] is False
    assert again["changed"] is False


def test_state_stopped_stops_and_disables_keeps_the_files_and_present_starts_it_again(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    unit = systemd.unit_file.read_text()
    stopped = {"name": "main", "state": "stopped", "settings": settings_for(tmp_path)}
    systemd.calls.clear()
    preview = run_module(apply.main, stopped, capsys, check_mode=True)
    assert (preview["changed"], preview["report"]["state"], systemd.verbs()) == (True, "stopped", [])
    done = run_module(apply.main, stopped, capsys)
    assert done["report"] == {"instance": "main", "unit": "llama-server-main.service", "state": "stopped",
                              "changed": True, "restarted": False}
    assert systemd.verbs() == ["disable"]
    assert (systemd.state.running, systemd.state.unit_file_state) == (False, "disabled")
    # Every file stays: the unit, the key, the instance's directory.
    assert systemd.unit_file.read_text() == unit
    assert (tmp_path / "etc" / "cred" / "main.key").exists()
    assert (tmp_path / "home" / "instances" / "main").is_dir()
    systemd.calls.clear()
    again = run_module(apply.main, stopped, capsys)
    assert (again["changed"], again["report"]["changed"], systemd.verbs()) == (False, False, [])
    back = run_module(apply.main, args(tmp_path), capsys)
    assert (back["state"], back["restarted"], back["was_running"], back["runs_plan"]) == ("deployed", True, False,
                                                                                          True)
    assert systemd.state.unit_file_state == "enabled"
    assert KEY not in json.dumps([preview, done, again, back])


def test_state_stopped_of_an_instance_never_deployed_changes_nothing(systemd, tmp_path, capsys):
    result = run_module(apply.main, {"name": "new", "state": "stopped", "settings": settings_for(tmp_path)}, capsys)
    assert (result["changed"], result["report"]["state"]) == (False, "stopped")
    assert "disable" not in systemd.verbs()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"name": "../../../../tmp/evil"}, "instance name '../../../../tmp/evil'"),
        ({"api_key": "good\nLD_PRELOAD=/tmp/evil.so"}, "the API key is refused"),
        ({"preset": {"EXTRA_ARGS": "--api_key k-apply-secret"}}, "must not carry --api-key"),
        ({"environment": {"LLAMA_API_KEY": "k-apply-secret"}}, "LLAMA_API_KEY names a key"),
    ],
    ids=["name", "key", "key flag", "key variable"],
)
def test_the_module_alone_refuses_what_the_role_refuses_before_reading_anything(systemd, tmp_path, capsys, change,
                                                                                said):
    result = run_module(apply.main, {**args(tmp_path), **change}, capsys)
    assert result["failed"] is True
    assert said in result["msg"]
    assert systemd.calls == []
    assert not (tmp_path / "etc").exists() or not any((tmp_path / "etc").rglob("*"))
    assert not (tmp_path.parent / "tmp" / "evil").exists()
    assert KEY not in json.dumps(result)


def test_a_setting_in_a_bad_form_is_refused_by_the_module_alone(systemd, tmp_path, capsys):
    settings = {**settings_for(tmp_path), "home": str(tmp_path) + "/home\rExecStartPre=+/bin/sh -c id\r#"}
    result = run_module(apply.main, {**args(tmp_path), "settings": settings}, capsys)
    assert result["failed"] is True
    assert "llama_server_home (settings.home)" in result["msg"]
    assert systemd.calls == []
