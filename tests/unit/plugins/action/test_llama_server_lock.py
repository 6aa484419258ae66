"""The lock action fills in the holder and takes over a lock whose holder on this controller is gone."""

import os
import socket

from ansible_collections.llamafleet.llamacpp.plugins.action import llama_server_lock as action_module
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import rollout_holder
from tests.unit.support import actions


def run_action(answers, args=None):
    result, calls = actions.run_action(action_module, args or {}, answers,
                                       {"ansible_play_name": "Deploy llama-server"})
    return result, [module_args for _name, module_args, _vars in calls]


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
