"""The host judge's controller side: inputs refused before any host is read, the keys kept out, the judge's
wire options, a host without the planning venv, and the lock's holder judged here. The target module is stood
in for by recorded answers (it has its own tests, and the molecule scenarios run it on real hosts)."""

import json
import os
import socket

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.llamafleet.llamacpp.plugins.action import llama_server_host as action_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import SETTINGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    HostReading,
    Need,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import target_code
from tests.unit.support import actions

try:
    from ansible.template import trust_as_template
except ImportError:  # before ansible-core 2.19 every string is a template
    trust_as_template = None

KEY = "k-very-secret-2"
ROW = {"instance": "main", "state": "deployed", "ctx": "4096", "error": f"nothing {KEY}"}


def run_action(answer, commands=None, check_mode=False, **more):
    args = {
        "instances": [{"name": "main", "preset": "small", "api_key": KEY}, {"name": "old", "state": "absent"}],
        "presets": {"small": {"model": "a.gguf", "ctx": 4096}},
        "engine_bin": "/e/llama-server", "venv": "/opt/venv",
        "models": [{"url": "https://h/a.gguf", "checksum": "sha256:ab"}],
        **more,
    }
    result, calls = actions.run_action(action_module, args, lambda _name, _args: answer,
                                       {"ansible_play_name": "Judge the fleet"}, commands=commands,
                                       check_mode=check_mode)
    # The module runs (the commands the action runs itself are tested apart, below).
    return result, [call for call in calls if call[0] not in ("command", "file")]


def test_a_current_host_and_the_wire_options():
    result, [(name, args, task_vars)] = run_action({"current": True, "why": [], "report": [ROW], "lock_holder": {}})
    assert name == "llamafleet.llamacpp.llama_server_judge"
    assert task_vars["ansible_python_interpreter"] == "/opt/venv/bin/python"
    assert (result["current"], result["why"]) == (True, [])
    assert result["report"][0]["error"] == "nothing ********"
    assert args["keys"] == {"main": KEY}
    assert KEY not in json.dumps({k: v for k, v in args.items() if k != "keys"})
    # The layered preset, without the key (the instance's api_key is not part of it either).
    assert args["instances"] == [{"name": "main", "environment": {}, "preset": {"MODEL": "a.gguf", "CTX": 4096}}]
    assert args["absent"] == ["old"]
    assert args["models"] == [{"path": "/var/lib/llamafleet/models/a.gguf", "checksum": "sha256:ab"}]
    assert args["planning_venv"]["marker"] == "/opt/venv/llamafleet-runtime.json"
    assert args["engine"] == {"bin": "/e/llama-server", "marker": "", "checksum": ""}
    archive = run_action({"current": False, "why": [], "report": [], "lock_holder": {}}, engine_bin="",
                         engine_archive_url="https://h/e.tgz", engine_archive_checksum="sha256:e",
                         engine_dir="/opt/e/b1")[1][0][1]
    assert archive["engine"] == {"bin": "", "marker": "/opt/e/b1/.llamafleet-engine.json", "checksum": "sha256:e"}
    assert args["settings"]["runtime"] == "systemd"
    assert KEY not in json.dumps(result)


def test_bad_inputs_fail_before_the_host_is_read():
    result, calls = run_action({}, instances=[{"name": "a b"}])
    assert result["failed"] is True
    assert "instance name 'a b': it names the unit" in result["msg"]
    assert calls == []


def test_a_host_without_the_planning_venv_is_not_current():
    result, _calls = run_action({"failed": True, "rc": 127, "module_stderr": "/bin/sh: 1: /opt/venv/bin/python: "
                                 "not found", "msg": "MODULE FAILURE"})
    assert (result.get("failed"), result["current"], result["why"]) == (None, False, [action_module.NO_RUNTIME])


def test_another_judge_failure_fails_the_host():
    result, _calls = run_action({"failed": True, "msg": "boom"})
    assert result["failed"] is True
    assert "boom" in result["msg"]


def test_a_live_holder_fails_the_host_naming_it():
    holder = {"controller": "elsewhere", "pid": 5, "pid_start": "1", "user": "ops", "playbook": "p",
              "taken": 4102444800}  # 2100: within any lease
    result, _calls = run_action({"current": True, "why": [], "report": [], "lock_holder": holder})
    assert result["failed"] is True
    assert "another rollout holds this host: controller elsewhere, pid 5" in result["msg"]


def test_a_gone_holder_of_this_controller_or_an_expired_one_is_not_counted():
    gone = {"controller": socket.gethostname(), "pid": 999999999, "pid_start": "1", "taken": 4102444800}
    result, _calls = run_action({"current": True, "why": [], "report": [], "lock_holder": gone})
    assert result["current"] is True
    old = {"controller": "elsewhere", "pid": 5, "pid_start": "1", "taken": 1}
    result, _calls = run_action({"current": True, "why": [], "report": [], "lock_holder": old})
    assert result["current"] is True
    ours = {"controller": socket.gethostname(), "pid": os.getppid(), "pid_start": action_module.this_rollout({})[
        "pid_start"], "taken": 4102444800}
    result, _calls = run_action({"current": True, "why": [], "report": [], "lock_holder": ours})
    assert result["current"] is True


def test_compose_hosts_are_judged_like_systemd_hosts():
    result, [(name, args, _vars)] = run_action({"current": True, "why": [], "report": [ROW], "engine": "/app/x",
                                                "lock_holder": {}},
                                               settings={"runtime": "compose", "image": "ghcr.io/ggml-org/x:server"})
    assert (name, args["settings"]["runtime"], result["current"], result["engine"]) == (
        "llamafleet.llamacpp.llama_server_judge", "compose", True, "/app/x")


KEYED = {"instances": [{"name": "main", "preset": "small", "api_key": KEY}], "presets": {"small": {"model": "a.gguf"}},
         "engine_bin": "/e/llama-server", "venv": "/opt/venv"}
CURRENT = {"changed": False, "current": True, "why": [], "report": [ROW], "engine": "/e", "lock_holder": {}}


def test_the_judge_runs_from_the_venvs_copy_of_the_code_with_the_options_on_stdin():
    result, calls = actions.run_action(
        action_module, KEYED,
        lambda _name, _args: pytest.fail("the module ran"), {},
        commands=lambda command, stdin: {"rc": 0, "stdout": json.dumps(CURRENT), "stderr": ""})
    [(kind, command, stdin)] = calls
    assert kind == "command"
    assert command.startswith("/opt/venv/bin/python -I -c ")
    assert command.endswith(f" /opt/venv/llamafleet-code/{target_code.digest()}")
    assert KEY not in command
    assert json.loads(stdin)["keys"] == {"main": KEY}
    assert (result["current"], result["report"][0]["error"]) == (True, "nothing ********")


def test_a_missing_version_of_the_code_is_installed_then_used():
    answers = iter([{"rc": target_code.MISSING, "stdout": "", "stderr": ""}, {"rc": 0, "stdout": "", "stderr": ""},
                    {"rc": 0, "stdout": json.dumps(CURRENT), "stderr": ""}])
    result, calls = actions.run_action(
        action_module, {"instances": [], "venv": "/opt/venv", "engine_bin": "/e/llama-server"},
        lambda _name, _args: pytest.fail("the module ran"), {}, commands=lambda command, stdin: next(answers))
    kinds = [call[0] for call in calls]
    assert kinds == ["command", "file", "command", "command"]
    assert calls[1][2] == target_code.archive()
    assert "compileall" in calls[2][1]
    assert result["current"] is True


@pytest.mark.parametrize(
    ("answer", "check_mode", "module_runs"),
    [
        ({"rc": target_code.MISSING, "stdout": "", "stderr": ""}, True, True),  # check mode installs nothing
        ({"rc": 0, "stdout": "not JSON", "stderr": ""}, False, True),
        ({"rc": 1, "stdout": "", "stderr": "Traceback"}, False, True),
        ({"rc": 127, "stdout": "", "stderr": "python: not found"}, False, False),  # no venv: not current
    ],
    ids=["check mode", "no JSON", "failed", "no venv"],
)
def test_the_module_answers_when_the_venvs_copy_cannot(answer, check_mode, module_runs):
    ran = []

    def module(_name, _args):
        ran.append(True)
        return CURRENT

    result, _calls = actions.run_action(
        action_module, {"instances": [], "venv": "/opt/venv", "engine_bin": "/e/llama-server"}, module, {},
        check_mode=check_mode, commands=lambda command, stdin: answer)
    assert bool(ran) is module_runs
    assert result["current"] is module_runs  # the stand-in module says current; no venv is not current


def test_without_pipelining_the_options_go_in_a_private_file():
    _result, calls = actions.run_action(
        action_module, KEYED,
        lambda _name, _args: CURRENT, {}, pipelining=False,
        commands=lambda command, stdin: {"rc": 0, "stdout": json.dumps(CURRENT), "stderr": ""})
    (file_kind, path, data), (command_kind, command, stdin) = calls
    assert (file_kind, command_kind, stdin) == ("file", "command", None)
    assert command.endswith(" " + path)
    assert json.loads(data)["keys"] == {"main": KEY}
    assert KEY not in command


# ---------------------------------------------------------------- the deploy playbook's placement
DEPLOYMENTS = [{"name": "tiny", "preset": "small", "replicas": 2, "settings": {"ctx": 2048}, "api_key": KEY}]
READINGS = HostReading(capacity=HostCapacity(ram_free_mib=9000), estimates={"tiny": Need(memory_mib=78)}).as_dict()


def test_deployments_reach_the_judge_layered_with_their_keys_apart():
    result, [(_name, args, _vars)] = run_action({**CURRENT, "placement": READINGS}, deployments=DEPLOYMENTS)
    [deployment] = args["placement"]["deployments"]
    assert deployment == {"name": "tiny", "preset": {"MODEL": "a.gguf", "CTX": 2048}, "environment": {}, "gpus": 0,
                          "version": deployment["version"]}
    assert args["keys"] == {"main": KEY, "deployment tiny": KEY}
    assert KEY not in json.dumps(args["placement"])
    assert result["placement"] == READINGS  # as the judge read it: the controller versions the deployments
    assert KEY not in json.dumps(result)


def test_place_takes_the_hosts_deployments_templated_as_the_option_would_be():
    host_vars = {"llama_fleet_deployments": [{**DEPLOYMENTS[0], "settings": {"host": "{{ ansible_host }}"},
                                              "api_key": "{{ vault_key }}"}],
                 "ansible_host": "10.0.0.9", "vault_key": KEY}
    if trust_as_template is not None:  # ansible-core 2.19 and later: the inventory's strings are trusted templates
        host_vars["llama_fleet_deployments"][0]["settings"]["host"] = trust_as_template("{{ ansible_host }}")
        host_vars["llama_fleet_deployments"][0]["api_key"] = trust_as_template("{{ vault_key }}")
    base = {"instances": [{"name": "main", "preset": "small", "api_key": KEY}], "engine_bin": "/e/llama-server",
            "presets": {"small": {"model": "a.gguf", "ctx": 4096}}, "venv": "/opt/venv"}
    by_place, calls = actions.run_action(action_module, {**base, "place": True},
                                         lambda _name, _args: {**CURRENT, "placement": READINGS}, host_vars,
                                         templar=Templar(loader=DataLoader(), variables=host_vars))
    assert not by_place.get("failed"), by_place
    [deployment] = next(call for call in calls if call[0] not in ("command", "file"))[1]["placement"]["deployments"]
    assert deployment["preset"] == {"MODEL": "a.gguf", "CTX": 4096, "HOST": "10.0.0.9"}
    given = {**DEPLOYMENTS[0], "settings": {"host": "10.0.0.9"}}
    by_option, option_calls = actions.run_action(action_module, {**base, "deployments": [given]},
                                                 lambda _name, _args: {**CURRENT, "placement": READINGS}, {})
    assert [call[1] for call in calls if call[0] not in ("command", "file")] == [
        call[1] for call in option_calls if call[0] not in ("command", "file")]
    assert by_place == by_option
    # A host without llama_fleet_deployments places nothing.
    _result, calls = actions.run_action(action_module, {**base, "place": True}, lambda _name, _args: CURRENT, {},
                                        templar=Templar(loader=DataLoader(), variables={}))
    assert "placement" not in next(call for call in calls if call[0] not in ("command", "file"))[1]


def test_without_deployments_the_judge_reads_nothing_for_a_placement():
    result, [(_name, args, _vars)] = run_action(CURRENT)
    assert "placement" not in args
    assert "placement" not in result


def test_bad_deployments_fail_before_the_host_is_read():
    result, calls = run_action({}, deployments=[{"name": "tiny", "preset": "nope", "replica": 2}])
    assert result["failed"] is True
    assert "unknown field(s) replica" in result["msg"]
    assert calls == []
    result, calls = run_action({}, deployments=[{"name": "main", "preset": "small"}],
                               instances=[{"name": "main-0", "preset": "small"}])
    assert "its replica name(s) main-0 are taken by instances of llama_server_instances" in result["msg"]
    assert calls == []


def test_a_placed_replica_listed_by_the_playbook_is_judged_with_its_record():
    _result, [(_name, args, _vars)] = run_action(CURRENT, instances=[
        {"name": "tiny-1", "preset": "small", "port": 8081, "placement": {"deployment": "tiny", "replica": 1}}])
    preset = {"MODEL": "a.gguf", "CTX": 4096, "PORT": 8081}
    record = {"deployment": "tiny", "replica": 1, "port": 8081, "cuda_visible_devices": ""}
    assert args["instances"] == [{"name": "tiny-1", "environment": {}, "preset": preset, "placement": record}]


def test_a_host_without_the_venv_is_read_with_its_own_interpreter_for_the_placement():
    answers = iter([{"failed": True, "rc": 127, "module_stderr": "/bin/sh: 1: /opt/venv/bin/python: not found"},
                    {**CURRENT, "current": False, "why": ["the planning runtime is not installed"],
                     "placement": READINGS}])
    result, calls = actions.run_action(action_module, {**KEYED, "deployments": DEPLOYMENTS},
                                       lambda _name, _args: next(answers), {},
                                       commands=lambda command, stdin: {"rc": 127, "stdout": "", "stderr": ""})
    modules = [call for call in calls if call[0] not in ("command", "file")]
    assert [call[2].get("ansible_python_interpreter") for call in modules] == ["/opt/venv/bin/python", None]
    assert HostReading.from_dict(result["placement"]).capacity.ram_free_mib == 9000
    assert result["current"] is False


def test_role_variables_give_the_options_the_task_leaves_out():
    """The role's judge step: every option read from the role's variables on the host, each the value the option
    given in the task would have; an option the task gives wins."""
    settings = {setting.role_variable: setting.spec()["default"] for setting in SETTINGS if not setting.secret}
    host_vars = {**settings, "llama_server_presets": {"small": {"model": "a.gguf", "ctx": 4096}},
                 "_llama_server_all_instances": [{"name": "main", "preset": "small", "api_key": KEY},
                                                 {"name": "old", "state": "absent"}],
                 "llama_server_engine_bin": "/e/llama-server", "llama_server_venv": "/opt/venv",
                 "llama_server_models": [{"url": "https://h/a.gguf", "checksum": "sha256:ab"}],
                 "llama_fleet_lock_lease_s": 600, "_llama_fleet_placing": False}
    templar = Templar(loader=DataLoader(), variables=host_vars)
    by_variables, calls = actions.run_action(action_module, {"role_variables": True}, lambda _name, _args: CURRENT,
                                             host_vars, templar=templar)
    assert not by_variables.get("failed"), by_variables
    by_options, option_calls = run_action(CURRENT, lock_lease_s=600)
    judged = [call[1] for call in calls if call[0] not in ("command", "file")]
    assert judged == [call[1] for call in option_calls]
    assert by_variables == by_options
    # The task's own option wins over the role's variable.
    _result, calls = actions.run_action(action_module, {"role_variables": True, "venv": "/other/venv"},
                                        lambda _name, _args: CURRENT, host_vars, templar=templar)
    assert "/other/venv" in next(call for call in calls if call[0] == "command")[1]


@pytest.mark.parametrize(("missing", "given", "message"), [
    ("llama_server_home", {}, "llama_server_home is not defined: role_variables reads the options from the "
                              "llama_server role's variables (is this task in the role?)"),
    (None, {"llama_server_engine_bin": "{{ nowhere_defined }}"}, "llama_server_engine_bin: "),
    (None, {"llama_server_presets": {"small": "not a preset"}}, "merge_preset: layer 0 is not a mapping"),
])
def test_role_variables_that_are_missing_or_wrong_fail_before_the_host_is_read(missing, given, message):
    host_vars = {setting.role_variable: setting.spec()["default"] for setting in SETTINGS if not setting.secret}
    host_vars.update(_llama_server_all_instances=[{"name": "main", "preset": "small"}],
                     llama_server_presets={"small": {"model": "a.gguf"}})
    host_vars.pop(missing, None)
    for name, value in given.items():
        host_vars[name] = trust_as_template(value) if trust_as_template and isinstance(value, str) else value
    result, calls = actions.run_action(action_module, {"role_variables": True}, lambda _name, _args: CURRENT,
                                       host_vars, templar=Templar(loader=DataLoader(), variables=host_vars))
    assert result["failed"]
    assert message in result["msg"]
    assert calls == []


@pytest.mark.parametrize(("gateway_vars", "paths"), [
    pytest.param({}, {"config_path": "/etc/haproxy/haproxy.cfg", "lua_path": "/etc/haproxy/llamafleet.lua",
                      "state_file": "/var/lib/haproxy/llamafleet-server-state",
                      "admin_socket": "/run/haproxy/admin.sock"}, id="defaults"),
    pytest.param({"llama_gateway_config_path": "/srv/gw/haproxy.cfg", "llama_gateway_admin_socket": "/run/gw.sock"},
                 {"config_path": "/srv/gw/haproxy.cfg", "lua_path": "/etc/haproxy/llamafleet.lua",
                  "state_file": "/var/lib/haproxy/llamafleet-server-state", "admin_socket": "/run/gw.sock"},
                 id="the-hosts-own"),
    pytest.param({"llama_gateway_config_path": "relative.cfg"}, None, id="wrong-settings-not-read"),
])
def test_a_gateway_host_has_its_gateway_read_in_the_same_run(gateway_vars, paths):
    """read_gateway (the deploy playbook's gateways): the judge's one run also reads the gateway, at the paths of
    the host's gateway settings (their defaults where it sets none; none when they are wrong), and the result
    carries the reading."""
    settings = {setting.role_variable: setting.spec()["default"] for setting in SETTINGS if not setting.secret}
    host_vars = {**settings, "llama_server_presets": {"small": {"model": "a.gguf"}},
                 "_llama_server_all_instances": [{"name": "main", "preset": "small", "api_key": KEY}],
                 "llama_server_engine_bin": "/e/llama-server", "_llama_fleet_read_gateway": True, **gateway_vars}
    reading = {"config": "ab" * 32, "running": True}
    result, calls = actions.run_action(action_module, {"role_variables": True},
                                       lambda _name, args: {**CURRENT, "gateway": reading} if "gateway" in args
                                       else CURRENT, host_vars,
                                       templar=Templar(loader=DataLoader(), variables=host_vars))
    assert not result.get("failed"), result
    (judged,) = [call[1] for call in calls if call[0] not in ("command", "file")]
    assert judged.get("gateway") == paths
    assert ("gateway" in result) is (paths is not None)
    if paths is not None:
        assert result["gateway"] == reading


def test_a_router_instance_reaches_the_judge_with_its_models_and_its_drain_comes_back():
    models = ["small", {"name": "code", "preset": "small", "settings": {"ctx": 1024}}]
    router = {"name": "team", "port": 8090, "api_key": KEY, "models": models}
    answer = {"current": False, "why": ["instance team: would reload: code: ctx"], "report": [], "lock_holder": {},
              "work": {"all": False, "instances": ["team"], "router_drain": {"team": ["team/code"]}}}
    result, [(_name, args, _vars)] = run_action(answer, instances=[router])
    assert args["instances"] == [{"name": "team", "environment": {}, "preset": {"PORT": 8090}, "router": {
        "models": [{"name": "small", "preset": {"MODEL": "a.gguf", "CTX": 4096}},
                   {"name": "code", "preset": {"MODEL": "a.gguf", "CTX": 1024}}], "autoload": True}}]
    assert args["keys"] == {"team": KEY}
    # Only the model to reload is drained by the rollout (fleet_run.restarting_instances reads it).
    assert result["work"] == {"all": False, "instances": ["team"], "router_drain": {"team": ["team/code"]}}
