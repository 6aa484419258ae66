"""llama_server_apply's decisions and rollback, in-process, over a small stand-in for systemd and the engine.

The real systemd, journal and engine are exercised by the molecule scenarios (default, interrupted, rollback,
start-limit, props); here the stand-in keeps one unit whose "running" argv is the ExecStart= of the unit file
at its last restart, so each branch of the module can be driven and its file effects checked on disk.
"""

import dataclasses
import json
import shlex

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.running_state import UnitState
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import instance as converge
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_apply as apply
from tests.unit.support.module_runner import run_module

ARGV = ("/opt/e/llama-server", "-m", "/m/a.gguf", "-c", "4096", "--port", "8080")


def unit_text(argv):
    return "[Service]\nExecStart=" + " ".join(argv) + "\n"


class Systemd:
    """One unit: what is on disk at each restart becomes what runs."""

    def __init__(self, tmp_path, monkeypatch):
        self.unit_file = tmp_path / "llama-server-main.service"
        self.state = UnitState(load_state="not-found", active_state="inactive", sub_state="dead")
        self.calls = []
        self.crash_when = lambda argv: False
        self.ctx_override = None
        monkeypatch.setattr(converge, "unit_path", lambda name: str(self.unit_file))
        monkeypatch.setattr(converge, "read_unit_state", lambda run, unit: self.state)
        monkeypatch.setattr(
            converge, "probe_http_get", lambda url, sock, timeout: (200 if self.state.running else -1, b"")
        )
        monkeypatch.setattr(converge, "read_props", lambda url, sock, headers=None: self.props())
        monkeypatch.setattr(converge, "wait_healthy", self.wait)
        monkeypatch.setattr(converge, "journal_tail", lambda run, unit, lines, since="": ["error: bad value", "exit 1"])
        monkeypatch.setattr(apply.AnsibleModule, "run_command", self.run_command)

    def run(self, argv):
        self.state = UnitState(load_state="loaded", active_state="active", sub_state="running", main_pid=100,
                               unit_file_state="enabled", cmdline=tuple(argv), environ={})

    def props(self):
        if not self.state.running:
            return None
        words = list(self.state.cmdline)
        ctx = self.ctx_override or int(words[words.index("-c") + 1])
        return {"default_generation_settings": {"n_ctx": ctx}, "total_slots": 1, "model_path": words[2]}

    def wait(self, url, sock, **_kw):
        return (200, "") if self.state.running else (-1, "the engine exited while starting")

    def run_command(self, argv, *_args, **_kwargs):
        self.calls.append(list(argv))
        if argv[:2] == ["systemctl", "restart"]:
            line = next(x for x in self.unit_file.read_text().splitlines() if x.startswith("ExecStart="))
            argv_now = shlex.split(line[len("ExecStart="):])
            if self.crash_when(argv_now):
                self.state = UnitState(load_state="loaded", active_state="failed", sub_state="failed",
                                       result="exit-code", unit_file_state="enabled")
            else:
                self.run(argv_now)
        return 0, "", ""

    def verbs(self):
        return [" ".join(call[1:2]) for call in self.calls if call[0] == "systemctl"]


@pytest.fixture
def systemd(tmp_path, monkeypatch):
    return Systemd(tmp_path, monkeypatch)


def args(tmp_path, argv=ARGV, **more):
    base = {
        "instance": "main",
        "unit_content": unit_text(argv),
        "argv": list(argv),
        "environment": {},
        "credentials": [{"path": str(tmp_path / "cred" / "main.key"), "content": "k-secret\n", "label": "the API key"}],
        "remove": [str(tmp_path / "cred" / "main.env")],
        "home_dir": str(tmp_path / "home"),
        "user": "root",
        "group": "root",
        "expect": {"ctx": int(argv[argv.index("-c") + 1]), "slots": 1, "model_path": argv[2]},
        "api_key": "k-secret",
        "health_url": "http://127.0.0.1:8080/health",
        "last_good_dir": str(tmp_path / "last-good"),
        "state_file": str(tmp_path / "state.json"),
        "state_content": '{"ram_avail_mib": 1}\n',
    }
    base.update(more)
    return base


def test_first_deployment_then_a_no_op(systemd, tmp_path, capsys):
    first = run_module(apply.main, args(tmp_path), capsys)
    outcome = (first["state"], first["changed"], first["restarted"], first["runs_plan"])
    assert outcome == ("deployed", True, True, True)
    assert "the unit is not loaded yet" in first["reasons"][-1]
    assert systemd.verbs() == ["daemon-reload", "enable", "restart"]
    assert (tmp_path / "cred" / "main.key").stat().st_mode & 0o777 == 0o600
    assert len(list((tmp_path / "last-good" / "main").iterdir())) == 2
    assert json.loads((tmp_path / "state.json").read_text()) == {"ram_avail_mib": 1}
    systemd.calls.clear()
    again = run_module(apply.main, args(tmp_path), capsys)
    assert (again["changed"], again["restarted"], again["reasons"], systemd.verbs()) == (False, False, [], [])
    assert again["props"]["n_ctx"] == 4096
    assert "k-secret" not in json.dumps(first) + json.dumps(again)


def test_an_engine_running_another_argv_is_restarted_though_the_files_are_right(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    systemd.run([*ARGV[:4], "2048", *ARGV[5:]])  # an interrupted rollout: new file, old engine
    result = run_module(apply.main, args(tmp_path), capsys)
    assert result["reasons"] == ["the running engine's command line is not the plan's: word 4 is '2048', "
                                 "the plan has '4096'"]
    assert (result["restarted"], result["runs_plan"]) == (True, True)


def test_check_mode_decides_the_same_and_touches_nothing(systemd, tmp_path, capsys):
    result = run_module(apply.main, args(tmp_path), capsys, check_mode=True, diff=True)
    assert (result["state"], result["would_restart"], result["restarted"]) == ("previewed", True, False)
    assert result["diff"]["after"] == unit_text(ARGV)
    assert not systemd.unit_file.exists()
    assert not (tmp_path / "home").exists()
    assert systemd.verbs() == []


def test_a_start_limited_unit_is_reset_as_part_of_the_change(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    systemd.state = dataclasses.replace(systemd.state, active_state="failed", sub_state="failed",
                                        result="start-limit-hit", main_pid=0)
    systemd.calls.clear()
    result = run_module(apply.main, args(tmp_path), capsys)
    assert "the unit hit its start limit (start-limit-hit)" in result["reasons"]
    assert systemd.verbs() == ["daemon-reload", "reset-failed", "enable", "restart"]
    assert result["state"] == "deployed"


def test_a_failed_start_rolls_back_to_the_last_verified_unit(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    new = [*ARGV[:4], "8192", *ARGV[5:]]
    systemd.crash_when = lambda argv: "8192" in argv
    result = run_module(apply.main, args(tmp_path, argv=new), capsys)
    assert result["failed"] is True
    assert (result["rolled_back"], result["restarted"]) == (True, True)
    assert "the engine exited while starting — rolled back to the last verified unit" in result["msg"]
    assert "error: bad value" in result["msg"]
    assert result["engine_says"] == ["error: bad value", "exit 1"]
    assert systemd.unit_file.read_text() == unit_text(ARGV)
    assert systemd.state.cmdline == ARGV  # the previous engine runs again
    assert result["props"]["n_ctx"] == 4096  # and the report shows it


def test_an_engine_that_disagrees_with_props_is_refused(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    systemd.ctx_override = 256  # what -c 4k gives: 4 tokens, padded
    result = run_module(apply.main, args(tmp_path, argv=[*ARGV[:4], "8192", *ARGV[5:]]), capsys)
    assert result["failed"] is True
    assert "/props: n_ctx is 256 per slot with 1 slot(s), the plan has a context of 8192 tokens" in result["msg"]
    assert result["rolled_back"] is True


def test_a_new_instance_that_never_worked_is_removed(systemd, tmp_path, capsys):
    systemd.crash_when = lambda argv: True
    result = run_module(apply.main, args(tmp_path), capsys)
    assert result["failed"] is True
    assert "the new instance was removed" in result["msg"]
    assert not systemd.unit_file.exists()
    assert not (tmp_path / "cred" / "main.key").exists()
    assert not (tmp_path / "last-good" / "main").exists()
    assert "disable" in systemd.verbs()


def test_a_credential_no_longer_used_is_removed_and_restarts(systemd, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    (tmp_path / "cred" / "main.env").write_text("LLAMA_API_KEY=old\n")
    result = run_module(apply.main, args(tmp_path), capsys)
    assert any("(no longer used)" in reason for reason in result["reasons"])
    assert not (tmp_path / "cred" / "main.env").exists()
    assert result["restarted"] is True
