"""The instance action's controller side: preset layering, the key kept out of results, one module run per
instance (state present or absent), and the rows of instances that never reach it. The module is stood in for by
recorded answers; it has its own tests (and the molecule scenarios run it on real hosts)."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.action import llama_server_instance as action_module
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.scrub import scrub
from tests.unit.support import actions

KEY = "k-very-secret-1"
APPLY = "llamafleet.llamacpp.llama_server_apply"
APPLIED = {"changed": True, "state": "deployed", "restarted": True, "reasons": ["the unit file changed"], "pid": 7,
           "health": 200, "runs_plan": True, "report": {"instance": "main", "state": "deployed", "ctx": "4096"},
           "plan": {"argv": ["/e/llama-server", "-m", "/m/a.gguf"]}}


def run_action(instance, answers, **more):
    args = {"instance": instance, "presets": {"small": {"model": "a.gguf", "ctx": 4096}}, **more}
    return actions.run_action(action_module, args, answers, {"inventory_hostname": "h1"})


def test_one_module_run_with_the_layered_preset_and_the_key_apart():
    result, calls = run_action({"name": "main", "preset": "small", "api_key": KEY, "port": 8080,
                                "environment": {"GGML_X": "1"}}, {APPLY: APPLIED},
                               venv="/opt/venv", engine="/e/llama-server")
    [(name, module_args, task_vars)] = calls
    assert name == APPLY
    assert task_vars["ansible_python_interpreter"] == "/opt/venv/bin/python"
    assert module_args["preset"] == {"MODEL": "a.gguf", "CTX": 4096, "PORT": 8080}
    assert (module_args["api_key"], module_args["engine"], module_args["environment"]) == (
        KEY, "/e/llama-server", {"GGML_X": "1"})
    assert module_args["settings"]["health_delay_s"] == 2.0  # the table's defaults, filled in
    assert (result["changed"], result["report"]["state"], result["applied"]["restarted"]) == (True, "deployed", True)
    assert KEY not in json.dumps(result)


def test_a_preset_key_travels_as_the_key_only():
    _result, [(_name, module_args, _vars)] = run_action(
        {"name": "main", "settings": {"model": "a.gguf", "api_key": KEY}}, {APPLY: APPLIED})
    assert module_args["api_key"] == KEY
    assert "API_KEY" not in module_args["preset"]


def test_an_external_key_stays_on_the_controller():
    _result, [(_name, module_args, _vars)] = run_action(
        {"name": "main", "settings": {"model": "a.gguf", "external_key": "remote-secret-1"}}, {APPLY: APPLIED})
    assert "remote-secret-1" not in json.dumps(module_args)


@pytest.mark.parametrize(
    ("instance", "settings", "said"),
    [
        ({"name": "../../../../tmp/evil"}, {}, "instance name '../../../../tmp/evil'"),
        ({"name": "main", "api_key": "good\nLD_PRELOAD=/tmp/evil.so"}, {}, "the API key is refused"),
        ({"name": "main", "settings": {"API-KEY": KEY}}, {}, "preset key 'API-KEY' looks like API_KEY"),
        ({"name": "main", "settings": {"extra_args": f"--api_key {KEY}"}}, {}, "must not carry --api-key"),
        ({"name": "main", "environment": {"LLAMA_API_KEY": KEY}}, {}, "LLAMA_API_KEY names a key"),
        ({"name": "main"}, {"home": "/var/lib/llamafleet\rExecStartPre=+/bin/sh"}, "llama_server_home"),
        ({"name": "main"}, {"user": "llama\\"}, "llama_server_user"),
        ({"name": "old", "state": "absent"}, {"compose_dir": "relative"}, "llama_server_compose_dir"),
    ],
    ids=["name", "key", "misspelt key", "key flag", "key variable", "home", "user", "absent too"],
)
def test_bad_input_is_refused_before_anything_is_sent(instance, settings, said):
    result, calls = run_action(instance, {APPLY: APPLIED}, settings=settings)
    assert calls == []
    assert result["failed"] is True
    assert said in result["msg"]
    assert result["report"]["state"] == "failed"
    assert KEY not in json.dumps(result)


def test_a_key_in_a_result_is_masked():
    failed = {**APPLIED, "state": "failed", "failed": True, "msg": f"engine said {KEY}"}
    result = run_action({"name": "main", "preset": "small", "api_key": KEY}, {APPLY: failed})[0]
    assert result["failed"] is True
    assert KEY not in json.dumps(result)
    assert "engine said ********" in result["msg"]


def test_an_absent_instance_is_removed_by_the_hosts_own_interpreter():
    gone = {"changed": True, "report": {"instance": "old", "state": "absent", "changed": True}}
    result, [(name, module_args, task_vars)] = run_action({"name": "old", "state": "absent", "api_key": KEY},
                                                          {APPLY: gone}, venv="/opt/venv")
    assert (name, module_args["state"], module_args["name"]) == (APPLY, "absent", "old")
    assert "ansible_python_interpreter" not in task_vars
    assert "api_key" not in module_args
    assert result["report"]["state"] == "absent"


def test_a_stopped_instance_is_stopped_by_the_hosts_own_interpreter_without_its_preset_or_key():
    stopped = {"changed": True, "report": {"instance": "main", "state": "stopped", "changed": True}}
    result, [(name, module_args, task_vars)] = run_action(
        {"name": "main", "state": "stopped", "preset": "small", "api_key": KEY}, {APPLY: stopped}, venv="/opt/venv",
        pending="the engine is not installed yet")
    assert (name, module_args["state"], module_args["name"]) == (APPLY, "stopped", "main")
    assert "ansible_python_interpreter" not in task_vars
    assert not {"api_key", "preset", "engine"} & set(module_args)
    assert result["report"]["state"] == "stopped"


@pytest.mark.parametrize(
    ("instance", "more", "state"),
    [({"name": "main", "preset": "missing"}, {}, "failed"),
     ({"name": "main"}, {"pending": "the engine is not installed yet"}, "pending")],
    ids=["unknown preset", "pending"],
)
def test_rows_of_instances_that_are_not_applied(instance, more, state):
    result, calls = run_action(instance, {}, **more)
    assert (result["report"]["state"], calls) == (state, [])


def test_a_module_that_could_not_run_still_gives_a_row():
    failure = {"failed": True, "msg": "MODULE FAILURE", "rc": 1}
    result = run_action({"name": "main", "preset": "small"}, {APPLY: failure})[0]
    assert result["failed"] is True
    assert (result["report"]["state"], result["report"]["error"]) == ("failed", "instance main: MODULE FAILURE")
    assert result["report"]["unit"] == "llama-server-main.service"


def test_scrub():
    assert scrub({"a": [f"x{KEY}", 1, (KEY,)]}, KEY) == {"a": ["x********", 1, ["********"]]}
    assert scrub("text", "") == "text"
    with pytest.raises(ValueError, match="a secret of 1 characters is too short"):
        scrub("every e masked", "e")


@pytest.mark.parametrize(
    ("host_vars", "margins"),
    [
        pytest.param({}, (1024, 1024), id="defaults"),
        pytest.param({"llama_fleet_ram_margin_mib": "512", "llama_fleet_gpu_margin_mib": 2048}, (512, 2048),
                     id="the-hosts-own"),
        pytest.param({"llama_fleet_ram_margin_mib": None}, (1024, 1024), id="null-is-the-default-as-in-the-placement"),
    ],
)
def test_a_placed_replica_carries_its_record_and_its_hosts_margins(host_vars, margins):
    instance = {"name": "tiny-1", "port": 8081, "placement": {"deployment": "tiny", "replica": 1}}
    assert action_module.placement_option(instance, host_vars) == {
        "deployment": "tiny", "replica": 1, "port": 8081, "cuda_visible_devices": "",
        "ram_margin_mib": margins[0], "gpu_margin_mib": margins[1]}
