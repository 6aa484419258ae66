"""llama_gateway_config in-process, with a stand-in for `haproxy -c` (the real parser reads these files in
tests/integration/test_gateway_real.py): what it writes, keeps, refuses and hides."""

import json
import os

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import gateway
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.runtime_api import ServerState
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import UnitState
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_gateway_config
from tests.unit.support.module_runner import run_module

CLIENT_KEY = "client-key-0001"
ENGINE_KEY = "engine-key-0002"
SERVER = {"host": "h1", "instance": "main", "address": "10.0.0.1", "port": 8080, "slots": 2, "model": "alpha"}


def _haproxy(tmp_path, complaint=""):
    """A `haproxy -c` that accepts every file, or refuses it with an [ALERT] line."""
    path = tmp_path / ("haproxy-refuses" if complaint else "haproxy")
    path.write_text("#!/bin/sh\n" + (f"echo '[ALERT] (1) : {complaint}' >&2; exit 1\n" if complaint else "exit 0\n"))
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def etc(tmp_path):
    (tmp_path / "etc").mkdir()
    return tmp_path / "etc"


def _args(tmp_path, **more):
    settings = {"config_path": str(tmp_path / "etc" / "haproxy.cfg"), "lua_path": str(tmp_path / "llamafleet.lua"),
                "run_user": "", "chroot": "", "admin_socket": str(tmp_path / "admin.sock"),
                "state_file": str(tmp_path / "state")}
    return {"settings": settings, "api_keys": [CLIENT_KEY], "haproxy": _haproxy(tmp_path), "servers": [SERVER],
            "server_keys": {"h1:main": ENGINE_KEY}, **more}


def test_check_mode_then_write_then_nothing_to_do(tmp_path, etc, capsys):
    preview = run_module(llama_gateway_config.main, _args(tmp_path), capsys, check_mode=True, diff=True)
    assert (preview["changed"], preview["reload"]) == (True, True)
    assert ENGINE_KEY not in preview["diff"]["after"]
    assert "Bearer ********" in preview["diff"]["after"]
    assert list(etc.iterdir()) == []
    written = run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert (written["changed"], written["reload"], written["default_model"]) == (True, True, "alpha")
    assert written["models"] == [{"name": "alpha", "backend": "model_alpha", "replicas": ["h1/main"]}]
    assert "kept" not in written
    text = (etc / "haproxy.cfg").read_text()
    assert text.startswith("# Written by llamafleet.llamacpp (llama_gateway)")
    assert "server h1:main 10.0.0.1:8080 maxconn 2" in text
    routes = json.loads((etc / "haproxy.cfg.routes.json").read_text())
    assert routes == {"servers": [SERVER], "server_keys": {"h1:main": ENGINE_KEY}}
    for name in ("haproxy.cfg", "haproxy.cfg.routes.json"):
        assert oct((etc / name).stat().st_mode & 0o777) == "0o600"
    again = run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert (again["changed"], again["reload"]) == (False, False)


def test_a_foreign_file_is_kept_once(tmp_path, etc, capsys):
    (etc / "haproxy.cfg").write_text("# Debian's own\nglobal\n")
    first = run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert first["kept"] == str(etc / "haproxy.cfg.before-llamafleet")
    assert (etc / "haproxy.cfg.before-llamafleet").read_text() == "# Debian's own\nglobal\n"
    (etc / "haproxy.cfg").write_text("# edited by hand\n")
    second = run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert "kept" not in second  # the first foreign file stays the one kept
    assert (etc / "haproxy.cfg.before-llamafleet").read_text() == "# Debian's own\nglobal\n"


def test_only_the_routes_file_changes_without_a_reload(tmp_path, etc, capsys):
    run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    (etc / "haproxy.cfg.routes.json").write_text("{}")
    result = run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert (result["changed"], result["reload"]) == (True, False)
    assert json.loads((etc / "haproxy.cfg.routes.json").read_text())["servers"] == [SERVER]


def test_a_kept_host_keeps_what_the_routes_file_has(tmp_path, etc, capsys):
    other = {**SERVER, "host": "h2", "address": "10.0.0.2"}
    run_module(llama_gateway_config.main, _args(tmp_path, servers=[SERVER, other],
                                                server_keys={"h1:main": ENGINE_KEY, "h2:main": ENGINE_KEY}), capsys)
    # h2 is kept: what is given for it now (nothing) is not used.
    result = run_module(llama_gateway_config.main, _args(tmp_path, keep_hosts=["h2"]), capsys)
    assert result["changed"] is False
    assert result["models"][0]["replicas"] == ["h1/main", "h2/main"]


@pytest.mark.parametrize(
    ("more", "message"),
    [
        ({"servers": [{**SERVER, "model": "a b"}]}, "the gateway cannot be configured: h1/main: its engine lists"),
        ({"servers": [{"host": "h1"}]}, "the gateway cannot be configured: servers[0]: instance, address, port, "
                                        "slots, model missing"),
        ({"server_keys": {"h1:main": "bad key"}}, "h1/main: its API key cannot be sent by the gateway"),
        ({"api_keys": []}, "llama_gateway_api_keys is empty"),
    ],
)
def test_what_cannot_be_routed_is_refused_before_anything_is_read_or_written(tmp_path, etc, capsys, more, message):
    result = run_module(llama_gateway_config.main, _args(tmp_path, **more), capsys)
    assert result["failed"] is True
    assert message in result["msg"]
    assert result["errors"]
    assert "bad key" not in json.dumps(result)
    assert list(etc.iterdir()) == []


def test_a_file_the_parser_refuses_is_not_written(tmp_path, etc, capsys):
    run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    before = (etc / "haproxy.cfg").read_text()
    refused = run_module(llama_gateway_config.main, _args(tmp_path, notes=["a change"],
                                                          haproxy=_haproxy(tmp_path, "parsing error")), capsys)
    assert refused["failed"] is True
    assert refused["msg"] == ("HAProxy's parser refused the new configuration (nothing was written): "
                              "[ALERT] (1) : parsing error")
    assert (etc / "haproxy.cfg").read_text() == before
    assert [path.name for path in etc.iterdir() if path.name.startswith(".llamafleet-check-")] == []


def test_no_haproxy_directory(tmp_path, capsys):
    result = run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert result["msg"] == f"{tmp_path / 'etc'} does not exist: is HAProxy installed?"


def test_the_servers_states_are_saved_before_a_reload(tmp_path, etc, capsys, monkeypatch):
    (tmp_path / "admin.sock").touch()  # a running gateway
    asked = []

    def ask(api, line):
        asked.append((api.path, line))
        return "1\n# be_id be_name srv_id srv_name\n3 model_alpha 1 h1:main\n"

    monkeypatch.setattr(gateway.RuntimeSocket, "ask", ask)
    run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert asked == [(str(tmp_path / "admin.sock"), "show servers state")]
    assert (tmp_path / "state").read_text().endswith("3 model_alpha 1 h1:main\n")
    run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert len(asked) == 1  # nothing to reload: nothing saved


def test_a_state_that_cannot_be_saved_is_a_warning(tmp_path, etc, capsys):
    (tmp_path / "admin.sock").touch()  # not a socket: nobody answers
    result = run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert result["changed"] is True
    # ansible-core 2.19 returns warnings as structures, older ones as strings.
    assert "the servers' states were not saved before the reload" in json.dumps(result["warnings"])
    assert os.path.exists(etc / "haproxy.cfg")


def test_the_diff_masks_every_engine_key_either_file_holds(tmp_path, etc, capsys):
    """An engine's old key (in the configuration being replaced) and a kept host's key (taken from the routes file,
    not given) are masked too, not only the keys the task was given."""
    other = {**SERVER, "host": "h2", "address": "10.0.0.2", "model": "beta"}
    run_module(llama_gateway_config.main, _args(tmp_path, servers=[SERVER, other],
                                                server_keys={"h1:main": ENGINE_KEY, "h2:main": "engine-key-h2-03"}),
               capsys)
    rotated = run_module(llama_gateway_config.main,
                         _args(tmp_path, server_keys={"h1:main": "engine-key-new-04"}, keep_hosts=["h2"]),
                         capsys, check_mode=True, diff=True)
    text = rotated["diff"]["before"] + rotated["diff"]["after"]
    assert rotated["changed"] is True
    for key in (ENGINE_KEY, "engine-key-h2-03", "engine-key-new-04"):
        assert key not in text
        assert key not in json.dumps(rotated)
    assert "Bearer ********" in rotated["diff"]["before"]
    assert "Bearer ********" in rotated["diff"]["after"]


LUA = "-- llamafleet's Lua actions (a stand-in)\ncore.register_action('x', {'http-req'}, function(txn) end)\n"


def test_the_lua_actions_and_the_state_file_are_written_once_and_new_actions_reload(tmp_path, etc, capsys):
    first = run_module(llama_gateway_config.main, _args(tmp_path, lua=LUA), capsys)
    assert (first["changed"], first["reload"]) == (True, True)
    assert (tmp_path / "llamafleet.lua").read_text() == LUA
    assert oct((tmp_path / "llamafleet.lua").stat().st_mode & 0o777) == "0o644"
    assert (tmp_path / "state").read_text() == ""
    assert oct((tmp_path / "state").stat().st_mode & 0o777) == "0o600"
    again = run_module(llama_gateway_config.main, _args(tmp_path, lua=LUA), capsys)
    assert (again["changed"], again["reload"]) == (False, False)
    # A mode changed by hand is set back, as the text would be (HAProxy reloads it).
    (tmp_path / "llamafleet.lua").chmod(0o600)
    restored = run_module(llama_gateway_config.main, _args(tmp_path, lua=LUA), capsys)
    assert (restored["changed"], restored["reload"]) == (True, True)
    assert oct((tmp_path / "llamafleet.lua").stat().st_mode & 0o777) == "0o644"
    # A new collection's actions: the configuration's text is the same, and HAProxy must still load them.
    newer = run_module(llama_gateway_config.main, _args(tmp_path, lua=LUA + "-- more\n"), capsys)
    assert (newer["changed"], newer["reload"]) == (True, True)
    assert (tmp_path / "llamafleet.lua").read_text().endswith("-- more\n")
    # Without lua, the file is left as it is.
    left = run_module(llama_gateway_config.main, _args(tmp_path), capsys)
    assert (left["changed"], left["reload"]) == (False, False)
    assert (tmp_path / "llamafleet.lua").read_text().endswith("-- more\n")


def test_check_mode_writes_no_lua_and_no_state_file(tmp_path, etc, capsys):
    preview = run_module(llama_gateway_config.main, _args(tmp_path, lua=LUA), capsys, check_mode=True)
    assert (preview["changed"], preview["reload"]) == (True, True)
    assert not (tmp_path / "llamafleet.lua").exists()
    assert not (tmp_path / "state").exists()


UP_ENABLED = ("active", "enabled")
BOTH = ["h1:main", "h2:main"]


@pytest.mark.parametrize("case", [
    # (ActiveState, UnitFileState); each server's status in HAProxy (None: it does not route it); then the
    # expected (running, out_of_rotation)
    pytest.param((UP_ENABLED, {"h1:main": "UP", "h2:main": "UP 2/3"}, (True, [])), id="all-serving"),
    pytest.param((UP_ENABLED, {"h1:main": "DRAIN", "h2:main": "UP"}, (True, ["h1:main"])), id="one-drained"),
    pytest.param((UP_ENABLED, {"h1:main": "MAINT", "h2:main": "DOWN"}, (True, BOTH)), id="maintenance-and-down"),
    pytest.param((UP_ENABLED, {"h1:main": "UP", "h2:main": None}, (True, [])), id="not-routed"),
    pytest.param((("active", "disabled"), {"h1:main": "UP", "h2:main": "UP"}, (False, BOTH)),
                 id="does-not-start-at-boot"),
    pytest.param((("inactive", "enabled"), {}, (False, BOTH)), id="stopped"),
    pytest.param((UP_ENABLED, "unreadable", (True, BOTH)), id="socket-unreadable"),
])
def test_the_module_says_whether_haproxy_runs_and_what_is_out_of_rotation(tmp_path, etc, capsys, monkeypatch, case):
    unit, statuses, expected = case
    run_module(llama_gateway_config.main, _args(tmp_path, lua=LUA), capsys)  # written: no reload below
    active, enabled = unit
    monkeypatch.setattr(gateway, "read_unit_state",
                        lambda run, name: UnitState(active_state=active, unit_file_state=enabled))

    def states(api):
        if statuses == "unreadable":
            raise gateway.GatewayError("no answer")
        return [ServerState(backend="model_alpha", server=name, status=status, in_flight=0, queued=0)
                for name, status in statuses.items() if status is not None]

    monkeypatch.setattr(gateway.RuntimeSocket, "states", states)
    verified = [{"host": "h1", "instance": "main"}, {"host": "h2", "instance": "main"}]
    result = run_module(llama_gateway_config.main, _args(tmp_path, lua=LUA, verified=verified), capsys)
    assert result["reload"] is False
    assert (result["running"], result["out_of_rotation"]) == expected


def test_a_reload_puts_every_verified_instance_back(tmp_path, etc, capsys, monkeypatch):
    monkeypatch.setattr(gateway, "read_unit_state",
                        lambda run, name: UnitState(active_state="active", unit_file_state="enabled"))
    result = run_module(llama_gateway_config.main, _args(tmp_path, verified=[{"host": "h1", "instance": "main"}]),
                        capsys)
    assert (result["reload"], result["running"], result["out_of_rotation"]) == (True, True, ["h1:main"])


def test_a_verified_instance_without_its_host_is_refused(tmp_path, etc, capsys):
    result = run_module(llama_gateway_config.main, _args(tmp_path, verified=[{"instance": "main"}]), capsys)
    assert result["msg"] == "verified: instances[0]: give both host and instance"
    assert list(etc.iterdir()) == []
