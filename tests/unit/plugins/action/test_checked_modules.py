"""The controller side of llama_server_plan and llama_server_apply used alone (plugin_utils/checked_module.py):
a preset's key travels only as the masked api_key option, EXTERNAL_KEY not at all, and what the role refuses is
refused before anything is sent."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.action import (
    llama_server_apply,
    llama_server_judge,
    llama_server_plan,
)
from tests.unit.support import actions

KEY = "k-checked-secret"
PLAN = "llamafleet.llamacpp.llama_server_plan"
APPLY = "llamafleet.llamacpp.llama_server_apply"


def test_a_preset_key_travels_as_the_masked_option():
    result, [(name, module_args, _vars)] = actions.run_action(
        llama_server_plan, {"preset": {"ctx": 4096, "api_key": KEY, " External_Key ": "remote-secret-9"}},
        {PLAN: {"changed": False, "argv": ["/e", "-m", "/m/a.gguf"], "msg": f"said {KEY}"}})
    assert name == PLAN
    assert module_args["preset"] == {"ctx": 4096}
    assert module_args["api_key"] == KEY
    assert "remote-secret-9" not in json.dumps(module_args)
    assert KEY not in json.dumps(result)  # masked in what comes back too


def test_the_option_wins_over_the_preset():
    _result, [(_name, module_args, _vars)] = actions.run_action(
        llama_server_apply, {"name": "main", "preset": {"API_KEY": "k-from-the-preset"}, "api_key": KEY},
        {APPLY: {"changed": False}})
    assert (module_args["api_key"], module_args["preset"]) == (KEY, {})


@pytest.mark.parametrize(
    ("plugin", "args", "said"),
    [
        (llama_server_plan, {"environment": {"LLAMA_API_KEY": KEY}}, "LLAMA_API_KEY names a key"),
        (llama_server_plan, {"preset": {"API-KEY": KEY}}, "preset key 'API-KEY' looks like API_KEY"),
        (llama_server_plan, {"preset": {"EXTRA_ARGS": f"--api_key {KEY}"}}, "must not carry --api-key"),
        (llama_server_plan, {"instance": "main\n"}, "instance name 'main\\n'"),
        (llama_server_plan, {"preset": {"api_key": "short"}}, "a key has at least 8"),
        (llama_server_apply, {"name": "../../tmp/evil"}, "instance name '../../tmp/evil'"),
        (llama_server_apply, {"name": "main", "environment": {"HF_TOKEN": KEY}}, "HF_TOKEN names a key"),
        (llama_server_apply, {"name": "main", "settings": {"user": "root\\"}}, "llama_server_user"),
        (llama_server_judge, {"instances": [{"name": "main", "preset": {"API_KEY": KEY}}]},
         "a preset travels without API_KEY"),
        (llama_server_judge, {"instances": [{"name": "a b", "preset": {}}]}, "instance name 'a b'"),
        (llama_server_judge, {"instances": [], "settings": {"home": "rel"}}, "llama_server_home"),
    ],
)
def test_refused_before_anything_is_sent(plugin, args, said):
    result, calls = actions.run_action(plugin, args, {})
    assert calls == []
    assert result["failed"] is True
    assert said in result["msg"]
    assert KEY not in json.dumps(result)


def test_the_judge_alone_masks_its_keys():
    result, [(name, module_args, _vars)] = actions.run_action(
        llama_server_judge, {"instances": [{"name": "main", "preset": {"CTX": "4096"}}], "keys": {"main": KEY}},
        {"llamafleet.llamacpp.llama_server_judge": {"current": False, "why": [f"engine said {KEY}"]}})
    assert (name, module_args["keys"]) == ("llamafleet.llamacpp.llama_server_judge", {"main": KEY})
    assert "preset" not in module_args or module_args["preset"] == {}
    assert KEY not in json.dumps(result)
