"""The instance action's controller side: preset layering, the key kept out of results, the open-server guard,
and what it hands to the modules. The modules themselves are stood in for by recorded answers; they have
their own tests (and the molecule scenarios run them on real hosts)."""

import json
from unittest import mock

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.action import llama_server_instance as action_module
from ansible_collections.llamafleet.llamacpp.plugins.action.llama_server_instance import ARGUMENT_SPEC, scrub
from ansible_collections.llamafleet.llamacpp.plugins.doc_fragments.instance_settings import ModuleDocFragment
from ansible_collections.llamafleet.llamacpp.plugins.modules.llama_server_instance import DOCUMENTATION

KEY = "k-very-secret-1"
PLAN = {
    "argv": ["/e/llama-server", "-m", "/m/a.gguf", "-c", "4096", "--host", "0.0.0.0", "--port", "8080",
             "--api-key-file", "/run/credentials/llama-server-main.service/api_key"],
    "exec_start": "/e/llama-server ...",
    "env": {},
    "notes": [{"id": "n.1", "text": "a note"}],
    "plan_warnings": [],
    "decisions": {"host": "0.0.0.0", "port": "8080", "loopback_only": False,
                  "health_url": "http://127.0.0.1:8080/health", "health_unix_socket": "", "slot_dir": "",
                  "slot_persist": False, "expect": {"ctx": 4096, "slots": 1, "model_path": "/m/a.gguf"}},
    "facts": {"model": "/m/a.gguf", "model_bytes": 1 << 30, "ram_avail_mib": 1000, "gpus": []},
    "api_key_via_env": False,
    "external": False,
    "unset_environment": [],
}
APPLIED = {"state": "deployed", "changed": True, "restarted": True, "reasons": ["the unit file changed"],
           "pid": 7, "health": 200, "runs_plan": True, "props": {"n_ctx": 4096, "total_slots": 1}}


def run_action(instance, answers, **more):
    """The action's result and the (module, args) it executed."""
    task = mock.MagicMock()
    task.args = {"instance": instance, "presets": {"small": {"model": "a.gguf", "ctx": 4096}}, **more}
    task.async_val = 0
    task.check_mode = False
    task.diff = False
    action = action_module.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                        shared_loader_obj=None)
    calls = []

    def execute(module_name, module_args, task_vars):
        calls.append((module_name, module_args, task_vars))
        return json.loads(json.dumps(answers[module_name]))

    action._execute_module = execute
    return action.run(task_vars={"inventory_hostname": "h1"}), calls


def test_the_argument_spec_is_the_documentation():
    # The module's own options and those of the fragment it extends (ansible-doc shows the same union).
    own = yaml.safe_load(DOCUMENTATION)
    shared = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert own["extends_documentation_fragment"] == ["llamafleet.llamacpp.instance_settings"]
    assert set(ARGUMENT_SPEC) == set(own["options"]) | set(shared)
    assert {"presets", "journal_lines", "instance", "pending"} <= set(ARGUMENT_SPEC)
    assert ARGUMENT_SPEC["instance"] == {"type": "dict", "required": True}


def test_plan_render_apply(monkeypatch):
    result, calls = run_action({"name": "main", "preset": "small", "api_key": KEY, "port": 8080},
                               {"llamafleet.llamacpp.llama_server_plan": PLAN,
                                "llamafleet.llamacpp.llama_server_apply": APPLIED},
                               python="/opt/venv/bin/python", engine="/e/llama-server")
    (plan_name, plan_args, plan_vars), (apply_name, apply_args, apply_vars) = calls
    assert plan_name == "llamafleet.llamacpp.llama_server_plan"
    assert plan_vars["ansible_python_interpreter"] == "/opt/venv/bin/python"
    assert plan_args["preset"] == {"MODEL": "a.gguf", "CTX": 4096, "PORT": 8080}
    assert plan_args["api_key_file"] == "/run/credentials/llama-server-main.service/api_key"
    assert KEY not in json.dumps(plan_args)
    assert apply_name == "llamafleet.llamacpp.llama_server_apply"
    assert apply_vars["ansible_python_interpreter"] == "/opt/venv/bin/python"
    assert apply_args["credentials"][0]["content"] == KEY + "\n"
    assert apply_args["health_timeout_s"] == 80
    assert "LoadCredential=api_key:/etc/llamafleet/credentials/main.key" in apply_args["unit_content"]
    assert KEY not in apply_args["unit_content"]
    assert result["report"]["state"] == "deployed"
    assert result["report"]["ctx"] == "4096"
    assert result["changed"] is True
    assert KEY not in json.dumps(result)


def test_a_key_in_a_result_is_masked():
    applied = {**APPLIED, "state": "failed", "failed": True, "msg": f"engine said {KEY}"}
    answers = {"llamafleet.llamacpp.llama_server_plan": PLAN, "llamafleet.llamacpp.llama_server_apply": applied}
    result = run_action({"name": "main", "preset": "small", "api_key": KEY}, answers)[0]
    assert result["failed"] is True
    assert KEY not in json.dumps(result)
    assert "engine said ********" in result["msg"]


def test_an_open_server_without_a_key_is_refused_before_anything_changes():
    result, calls = run_action({"name": "main", "preset": "small"},
                               {"llamafleet.llamacpp.llama_server_plan": PLAN})
    assert result["failed"] is True
    assert "beyond loopback) without an API key" in result["msg"]
    assert [call[0] for call in calls] == ["llamafleet.llamacpp.llama_server_plan"]
    assert result["report"]["state"] == "failed"


@pytest.mark.parametrize(
    ("instance", "answers", "more", "state"),
    [
        ({"name": "main", "preset": "missing"}, {}, {}, "failed"),
        ({"name": "main"}, {"llamafleet.llamacpp.llama_server_plan": {"failed": True, "msg": "CTX: bad"}}, {},
         "failed"),
        ({"name": "main"}, {"llamafleet.llamacpp.llama_server_plan": {**PLAN, "external": True, "argv": []}}, {},
         "external"),
        ({"name": "main"}, {}, {"pending": "the engine is not installed yet"}, "pending"),
    ],
)
def test_rows_of_instances_that_are_not_applied(instance, answers, more, state):
    result, calls = run_action(instance, answers, **more)
    assert result["report"]["state"] == state
    assert all(call[0] != "llamafleet.llamacpp.llama_server_apply" for call in calls)


def test_the_plan_modules_refusal_is_quoted():
    result = run_action({"name": "main"}, {"llamafleet.llamacpp.llama_server_plan": {
        "failed": True, "msg": "the engine refused the planned command line: stoi"}})[0]
    assert result["msg"] == "instance main: the engine refused the planned command line: stoi"
    assert result["report"]["error"].endswith("(nothing was changed)")


def test_scrub():
    assert scrub({"a": [f"x{KEY}", 1, (KEY,)]}, KEY) == {"a": ["x********", 1, ["********"]]}
    assert scrub("text", "") == "text"
