"""The gateway's judge on the controller (llama_gateway_judge): what llama_gateway_config writes, read back by the host
judge's gateway reading (_converge/gateway.gateway_reading), is current; each thing the role would change is named.
The files are written by the module itself, so the controller's rendering is checked against the module's."""

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.llamafleet.llamacpp.plugins.action import llama_gateway_judge as action_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import gateway
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.runtime_api import ServerState
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import UnitState
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_gateway_config
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import gateway_fleet
from tests.unit.support import actions
from tests.unit.support.module_runner import run_module

CLIENT_KEY = "client-key-0001"
ENGINE_KEY = "engine-key-0002"
ROW = {"instance": "main", "state": "deployed", "host": "0.0.0.0", "port": "8080", "slots": 2, "model_name": "alpha"}
with open(action_module.LUA_PATH, encoding="utf-8") as _handle:
    LUA = _handle.read()


def _hostvars(tmp_path, **gateway_vars):
    paths = {"llama_gateway_config_path": str(tmp_path / "etc" / "haproxy.cfg"),
             "llama_gateway_lua_path": str(tmp_path / "etc" / "llamafleet.lua"),
             "llama_gateway_state_file": str(tmp_path / "state"),
             "llama_gateway_admin_socket": str(tmp_path / "admin.sock"),
             "llama_gateway_run_user": "", "llama_gateway_chroot": "", "llama_gateway_api_keys": [CLIENT_KEY]}
    fleet_host = {"ansible_host": "10.0.0.1", "llama_server_report": [ROW],
                  "llama_server_instances": [{"name": "main", "preset": "chat", "api_key": ENGINE_KEY}],
                  "llama_server_presets": {"chat": {"MODEL": "m.gguf"}}}
    return {"h1": fleet_host, "gw": {"ansible_host": "10.0.0.9", "inventory_hostname": "gw", **paths, **gateway_vars}}


def _write(tmp_path, capsys, hostvars):
    """The gateway role's module, on the same fleet and settings as the judge reads them."""
    fleet = gateway_fleet.gateway_servers(hostvars, ["h1"])
    names = ("config_path", "lua_path", "state_file", "admin_socket", "run_user", "chroot")
    settings = {name: hostvars["gw"]["llama_gateway_" + name] for name in names}
    haproxy = tmp_path / "haproxy"
    haproxy.write_text("#!/bin/sh\nexit 0\n")
    haproxy.chmod(0o755)
    written = run_module(llama_gateway_config.main, {
        "settings": settings, "api_keys": [CLIENT_KEY], "haproxy": str(haproxy), "servers": fleet["servers"],
        "server_keys": fleet["server_keys"], "notes": fleet["notes"], "lua": LUA, "verified": fleet["verified"]},
        capsys)
    assert written["changed"] is True, written
    return written


def _read(hostvars, monkeypatch, *, unit=("active", "enabled"), statuses=None):
    """What the host judge reads of the gateway, with systemd and HAProxy's runtime API stood in for."""
    monkeypatch.setattr(gateway, "read_unit_state",
                        lambda run, name: UnitState(active_state=unit[0], unit_file_state=unit[1]))
    statuses = {"h1:main": "UP"} if statuses is None else statuses
    monkeypatch.setattr(gateway.RuntimeSocket, "states", lambda api: [
        ServerState(backend="model_alpha", server=name, status=status, in_flight=0, queued=0)
        for name, status in statuses.items()])
    variables = hostvars["gw"]
    names = ("config_path", "lua_path", "state_file", "admin_socket")
    paths = {name: variables["llama_gateway_" + name] for name in names}
    return gateway.gateway_reading(paths, run=None)


def _judge(hostvars, reading, **args):
    task_vars = {**hostvars["gw"], "hostvars": hostvars}
    return actions.run_action(action_module, {"fleet_hosts": ["h1"], "reading": reading, **args},
                              task_vars=task_vars, templar=Templar(loader=DataLoader(), variables=task_vars))[0]


@pytest.fixture
def written(tmp_path, capsys):
    (tmp_path / "etc").mkdir()
    hostvars = _hostvars(tmp_path)
    return hostvars, _write(tmp_path, capsys, hostvars)


def test_what_the_module_wrote_is_current_and_recorded_as_the_role_would(tmp_path, written, monkeypatch):
    hostvars, module_result = written
    reading = _read(hostvars, monkeypatch)
    assert CLIENT_KEY not in str(reading)
    assert ENGINE_KEY not in str(reading)
    found = _judge(hostvars, reading)
    assert (found["current"], found["why"]) == (True, [])
    assert found["ansible_facts"] == {"llama_gateway_url": "http://10.0.0.9:8000",
                                      "llama_gateway_metrics_url": "",  # no exporter by default
                                      "llama_gateway_models": module_result["models"]}


@pytest.mark.parametrize(("change", "why"), [
    pytest.param(lambda tmp, hv: (tmp / "etc" / "haproxy.cfg").write_text("# edited\n"),
                 "its configuration would change", id="config-edited"),
    pytest.param(lambda tmp, hv: (tmp / "etc" / "haproxy.cfg.routes.json").write_text("{}"),
                 "its routes file would change", id="routes-edited"),
    pytest.param(lambda tmp, hv: (tmp / "etc" / "llamafleet.lua").chmod(0o600),
                 "its Lua actions would change", id="lua-mode"),
    pytest.param(lambda tmp, hv: (tmp / "state").unlink(),
                 "the file of its servers' states is missing", id="state-file-gone"),
    pytest.param(lambda tmp, hv: hv["h1"]["llama_server_report"].__setitem__(0, {**ROW, "slots": 4}),
                 "its configuration would change", id="fleet-changed"),
    pytest.param(lambda tmp, hv: hv["gw"].__setitem__("llama_gateway_port", 8001),
                 "its configuration would change", id="setting-changed"),
])
def test_each_change_the_role_would_make_is_named(tmp_path, written, monkeypatch, change, why):
    hostvars, _result = written
    change(tmp_path, hostvars)
    found = _judge(hostvars, _read(hostvars, monkeypatch))
    assert found["current"] is False
    assert why in found["why"]
    assert "ansible_facts" not in found


@pytest.mark.parametrize(("unit", "statuses", "why"), [
    (("inactive", "enabled"), {}, "HAProxy is not running, or does not start at boot"),
    (("active", "disabled"), {"h1:main": "UP"}, "HAProxy is not running, or does not start at boot"),
    (("active", "enabled"), {"h1:main": "DRAIN"}, "verified servers are out of rotation: h1:main"),
])
def test_haproxy_and_the_rotation_are_read(written, monkeypatch, unit, statuses, why):
    hostvars, _result = written
    found = _judge(hostvars, _read(hostvars, monkeypatch, unit=unit, statuses=statuses))
    assert found["why"] == [why]


def test_without_a_reading_or_with_hosts_kept_the_role_runs(tmp_path, written, monkeypatch):
    hostvars, _result = written
    assert _judge(hostvars, None)["why"] == ["its host was not read in this run's judge"]
    kept = _judge(hostvars, _read(hostvars, monkeypatch), keep_hosts=["h2"])
    assert kept["why"] == ["it keeps the servers of hosts this run has not finished: h2"]


@pytest.mark.parametrize(("variables", "why"), [
    ({"llama_gateway_api_keys": []}, "its settings are wrong (the gateway role says how)"),
    ({"llama_gateway_port": "eighty"}, "its settings are wrong (the gateway role says how)"),
])
def test_settings_the_role_would_refuse_leave_the_refusal_to_the_role(written, monkeypatch, variables, why):
    hostvars, _result = written
    reading = _read(hostvars, monkeypatch)
    hostvars["gw"].update(variables)
    assert _judge(hostvars, reading)["why"] == [why]


def test_a_fleet_that_cannot_be_routed_leaves_the_refusal_to_the_role(written, monkeypatch):
    hostvars, _result = written
    reading = _read(hostvars, monkeypatch)
    hostvars["h1"]["llama_server_report"] = None
    assert _judge(hostvars, reading)["why"] == ["the fleet cannot be routed (the gateway role says why)"]
