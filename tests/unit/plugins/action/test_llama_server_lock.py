"""The lock action fills in the holder and takes over a lock whose holder on this controller is gone."""

import os
import socket
from unittest import mock

from ansible_collections.llamafleet.llamacpp.plugins.action import llama_server_lock as action_module
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import rollout_holder


def run_action(answers, args=None):
    task = mock.MagicMock()
    task.args = args or {}
    task.async_val = 0
    task.check_mode = False
    action = action_module.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                        shared_loader_obj=None)
    calls = []

    def execute(module_name, module_args, task_vars):
        calls.append(dict(module_args))
        return dict(answers[len(calls) - 1])

    action._execute_module = execute
    return action.run(task_vars={"ansible_play_name": "Deploy llama-server"}), calls


def test_the_holder_is_this_rollout():
    result, (call,) = run_action([{"changed": True, "holder": {}}])
    holder = call["holder"]
    assert (holder["controller"], holder["pid"], holder["playbook"]) == (socket.gethostname(), os.getppid(),
                                                                         "Deploy llama-server")
    assert holder["pid_start"] == rollout_holder.process_start(os.getppid())
    assert result["changed"] is True


def test_a_gone_holder_on_this_controller_is_taken_over():
    gone = {"controller": socket.gethostname(), "pid": 999999999, "pid_start": "1"}
    result, calls = run_action([{"failed": True, "locked": True, "holder": gone, "holder_id": "x:1:1"},
                                {"changed": True, "holder": {}, "previous": gone}])
    assert calls[1]["take_over"] == "x:1:1"
    assert result["previous"] == gone


def test_a_live_holder_elsewhere_stays():
    alive = {"controller": "another-controller", "pid": 1, "pid_start": "1"}
    result, calls = run_action([{"failed": True, "locked": True, "holder": alive, "msg": "another rollout"}])
    assert len(calls) == 1
    assert result["failed"] is True
