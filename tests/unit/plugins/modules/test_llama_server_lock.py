"""The rollout lock, in-process on a real file: take, keep, refuse naming the holder, take over, release."""

import json
import os
import subprocess
import sys
import time

from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_lock as lock
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.rollout_holder import holder_alive, process_start
from tests.unit.support.module_runner import run_module

ME = {"controller": "ctl-a", "pid": 100, "pid_start": "5", "user": "ops", "playbook": "Deploy llama-server"}
OTHER = {"controller": "ctl-b", "pid": 200, "pid_start": "9", "user": "bob", "playbook": "Deploy llama-server"}


def take(tmp_path, capsys, holder, **more):
    return run_module(lock.main, {"path": str(tmp_path / "run" / "rollout.lock"), "holder": holder, **more}, capsys)


def test_take_keep_release(tmp_path, capsys):
    first = take(tmp_path, capsys, ME)
    assert (first["changed"], first["holder"]["pid"]) == (True, 100)
    assert take(tmp_path, capsys, ME)["changed"] is False  # the same rollout, another task
    released = take(tmp_path, capsys, ME, state="released")
    assert (released["changed"], released["holder"]) == (True, {})
    assert (tmp_path / "run" / "rollout.lock").read_text() == ""
    assert take(tmp_path, capsys, OTHER)["changed"] is True


def test_a_second_rollout_is_refused_naming_the_first(tmp_path, capsys):
    take(tmp_path, capsys, ME)
    refused = take(tmp_path, capsys, OTHER)
    assert refused["failed"] is True
    assert refused["locked"] is True
    assert refused["msg"].startswith("another rollout holds this host: controller ctl-a, pid 100, started ")
    assert "(user ops, playbook Deploy llama-server)" in refused["msg"]
    assert refused["holder_id"] == "ctl-a:100:5"
    # It does not release a lock that is not its own.
    assert take(tmp_path, capsys, OTHER, state="released")["changed"] is False
    assert json.loads((tmp_path / "run" / "rollout.lock").read_text())["pid"] == 100


def test_a_gone_or_expired_holder_is_taken_over(tmp_path, capsys):
    take(tmp_path, capsys, ME)
    wrong = take(tmp_path, capsys, OTHER, take_over="ctl-a:100:6")  # another process than the holder
    assert wrong["failed"] is True
    taken = take(tmp_path, capsys, OTHER, take_over="ctl-a:100:5")
    assert (taken["changed"], taken["previous"]["pid"], taken["holder"]["pid"]) == (True, 100, 200)
    path = tmp_path / "run" / "rollout.lock"
    path.write_text(json.dumps({**ME, "taken": int(time.time()) - 100}))
    assert take(tmp_path, capsys, OTHER, lease_s=60)["previous"]["pid"] == 100


def test_a_lease_out_of_range_is_refused_before_the_lock_is_read(tmp_path, capsys):
    for lease in (0, -1, 59, 604801):
        refused = take(tmp_path, capsys, ME, lease_s=lease)
        assert refused["failed"] is True
        assert refused["msg"] == f"lease_s={lease}: a lease is from 60 to 604800 seconds"
    assert not (tmp_path / "run").exists()


def test_check_mode_refuses_but_writes_nothing(tmp_path, capsys):
    result = run_module(lock.main, {"path": str(tmp_path / "rollout.lock"), "holder": ME}, capsys, check_mode=True)
    assert result["changed"] is True
    assert (tmp_path / "rollout.lock").read_text() == ""


def test_a_damaged_lock_file_is_no_holder(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "rollout.lock").write_text("{not json")
    assert take(tmp_path, capsys, ME)["changed"] is True


def test_holder_liveness_on_this_controller():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start = process_start(child.pid)
        assert start.isdigit()
        alive = {"controller": "here", "pid": child.pid, "pid_start": start}
        assert holder_alive(alive, "here") is True
        assert holder_alive({**alive, "pid_start": "1"}, "here") is False  # the pid was reused
        assert holder_alive(alive, "elsewhere") is True  # cannot be seen from here
    finally:
        child.kill()
        child.wait()
    assert holder_alive(alive, "here") is False
    assert holder_alive({"controller": "here", "pid": "x"}, "here") is False
    assert process_start(os.getpid())


def test_a_killed_but_unreaped_holder_is_gone(tmp_path):
    (tmp_path / "42").mkdir()
    stat = "42 (ansible-playbook) {state} 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"
    (tmp_path / "42" / "stat").write_text(stat.format(state="S"))
    assert process_start(42, str(tmp_path)) == "123456"
    (tmp_path / "42" / "stat").write_text(stat.format(state="Z"))
    assert process_start(42, str(tmp_path)) == ""
