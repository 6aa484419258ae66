"""The gateway's routes (fleet_routes.py): which running instances it sends requests to, grouped by model."""

import re

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes

ROW = {"instance": "main", "state": "deployed", "host": "0.0.0.0", "port": "8080", "slots": 4, "model_name": "gemma"}


@pytest.mark.parametrize(
    ("change", "address", "note"),
    [
        ({}, "10.0.0.5", ""),
        ({"host": "10.0.0.9"}, "10.0.0.9", ""),
        ({"host": "::"}, "10.0.0.5", ""),
        ({"host": "10.0.0.9,10.0.1.9"}, "10.0.0.5", ""),  # several addresses: the inventory's
        ({"host": "fd00::5"}, "fd00::5", ""),
        ({"host": "node5.example"}, "node5.example", ""),
        ({"host": "127.0.0.1"}, None, "listens on 127.0.0.1 only"),
        ({"host": "/run/llama.sock"}, None, "listens on /run/llama.sock only"),
        ({"state": "failed"}, None, "its state is failed"),
        ({"state": "previewed"}, "10.0.0.5", ""),  # it will change, and serves until it is drained
        ({"state": "previewed", "slots": 0}, None, "does not answer /props"),
        ({"state": "absent"}, None, ""),  # removed on purpose: no note
        ({"state": ""}, None, "its state is unknown"),
        ({"slots": 0}, None, "does not answer /props"),
        ({"slots": "x"}, None, "does not answer /props"),
        ({"slots": True}, None, "does not answer /props"),
        ({"port": "0"}, None, "error: h1/main: its port '0' is not a TCP port"),
        ({"port": "99999"}, None, "is not a TCP port"),
        ({"port": "http"}, None, "is not a TCP port"),
        ({"model_name": ""}, None, "error: h1/main: its engine lists the model as ''"),
        ({"model_name": "my model"}, None, "--alias"),
        ({"model_name": "gem'ma"}, None, "--alias"),
        ({"model_name": "gemma\n"}, None, "--alias"),
        ({"model_name": "a%b"}, None, "--alias"),
        ({"model_name": "/var/lib/llamafleet/models/g.gguf"}, "10.0.0.5", ""),
        ({"host": "bad host"}, None, "error: h1/main: the address 'bad host' cannot be a proxy server's"),
    ],
)
def test_server_from_row(change, address, note):
    server, found = fleet_routes.server_from_row("h1", "10.0.0.5", {**ROW, **change}, key="k" * 12)
    assert (server.address if server else None) == address
    assert (note in found) if note else found == ""


def test_server_key_checked_and_hidden():
    server, note = fleet_routes.server_from_row("h1", "10.0.0.5", ROW, key="bad key")
    assert server is None
    assert note.startswith("error:")
    assert "bad key" not in note
    server, _note = fleet_routes.server_from_row("h1", "10.0.0.5", ROW, key="good-key-1")
    assert "good-key-1" not in repr(server)


@pytest.mark.parametrize(
    ("text", "name"),
    [("h1:main", "h1:main"), ("node-1.example:main", "node-1.example:main"), ("h 1:main", None),
     ("h/1:main", None), ("a" * 120, None)],
)
def test_proxy_name(text, name):
    found = fleet_routes.proxy_name(text)
    assert all(char.isalnum() or char in "_.:-" for char in found)
    assert len(found) <= 100
    if name:
        assert found == name
    else:  # changed: a digest keeps apart texts that clean up alike
        assert found != text
        assert found != fleet_routes.proxy_name(text.replace("a", "b", 1) + "/")


def _server(host, model="gemma", key="key-12345678", instance="main", slots=2):
    return fleet_routes.Server(host=host, instance=instance, address="10.0.0.1", port=8080, slots=slots,
                               model=model, key=key)


def test_routes_group_and_order():
    routes = fleet_routes.routes([_server("h2"), _server("h1", model="qwen"), _server("h1")])
    assert [model.name for model in routes.models] == ["gemma", "qwen"]
    assert [server.host for server in routes.models[0].servers] == ["h1", "h2"]
    assert routes.models[0].backend == "model_gemma"
    assert routes.models[0].key == "key-12345678"
    assert routes.model("qwen").servers[0].host == "h1"
    assert routes.model("none") is None
    assert not routes.errors


def test_routes_refuse_mixed_keys():
    routes = fleet_routes.routes([_server("h1"), _server("h2", key="other-key-1")])
    assert routes.models == []
    assert "different API keys" in routes.errors[0]
    assert "other-key-1" not in routes.errors[0]


def test_routes_refuse_twice_the_same_instance():
    routes = fleet_routes.routes([_server("h1"), _server("h1")])
    assert "lists the same instance twice" in routes.errors[0]


def test_routes_model_names_with_other_characters_get_distinct_backends():
    routes = fleet_routes.routes([_server("h1", model="a/b"), _server("h1", model="a_b", instance="two")])
    backends = [model.backend for model in routes.models]
    assert len(set(backends)) == 2
    assert "model_a_b" in backends


ENTRY = {"host": "h1", "instance": "main", "address": "10.0.0.5", "port": 8080, "slots": 4, "model": "gemma"}


def test_a_server_as_a_dict_and_back():
    server = fleet_routes.Server.from_dict(ENTRY, key="key-12345678")
    assert server.as_dict() == ENTRY  # without its key: that travels by label, not logged
    assert fleet_routes.Server.from_dict(server.as_dict(), server.key) == server
    assert (server.label, server.name) == ("h1:main", "h1:main")
    as_text = {**ENTRY, "port": "8080", "slots": "4"}
    assert fleet_routes.Server.from_dict(as_text) == fleet_routes.Server.from_dict(ENTRY)


@pytest.mark.parametrize(
    ("change", "address"),
    [
        ({"address": " 10.0.0.9 "}, "10.0.0.9"),  # read as a listen address: blanks off
        ({"address": "[fd00::5]"}, "fd00::5"),
        ({"address": "node5.example"}, "node5.example"),
    ],
)
def test_server_from_dict(change, address):
    assert fleet_routes.Server.from_dict({**ENTRY, **change}, key="k" * 12).address == address


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"address": "127.0.0.1"}, "h1/main is left out: it listens on 127.0.0.1 only"),
        ({"address": "10.0.0.1,10.0.0.2"}, "h1/main: the address '10.0.0.1,10.0.0.2' cannot be"),
        ({"port": 0}, "h1/main: its port 0 is not a TCP port"),
        ({"slots": True}, "h1/main is left out: its engine does not answer /props"),
        ({"model": "a b"}, "h1/main: its engine lists the model as 'a b'"),
        ({"model": None, "port": ""}, "port, model missing"),
    ],
)
def test_server_from_dict_refuses(change, error):
    with pytest.raises(fleet_routes.ServerError, match="^" + re.escape(error)):
        fleet_routes.Server.from_dict({**ENTRY, **change}, key="k" * 12)


def test_servers_from_dicts_name_the_entry_only_when_the_server_cannot_be_named():
    entries = [ENTRY, {"host": "h2", "instance": "main"}, {**ENTRY, "host": "h3", "model": "a b"}]
    servers, errors = fleet_routes.servers_from_dicts(entries, {"h1:main": "key-12345678"})
    assert [(server.host, server.key) for server in servers] == [("h1", "key-12345678")]
    assert errors[0] == "servers[1]: address, port, slots, model missing"
    assert errors[1].startswith("h3/main: its engine lists the model as 'a b'")


KEY = "k-0123456789"

ROUTER_ROW = {**ROW, "instance": "team", "slots": 0, "model_name": "", "router_autoload": True,
              "router_models": [{"name": "chat", "status": "loaded", "slots": 2, "failed": False},
                                {"name": "code", "status": "unloaded", "slots": 1, "failed": False},
                                {"name": "broken", "status": "unloaded", "slots": 1, "failed": True}]}


def test_a_router_is_routed_model_by_model_with_its_key():
    found = fleet_routes.fleet_servers([{"name": "h1", "address": "10.0.0.5", "report": [ROUTER_ROW],
                                         "keys": {"team": KEY}}])
    assert [(server["instance"], server["model"], server["slots"]) for server in found["servers"]] == [
        ("team/chat", "chat", 2), ("team/code", "code", 1)]
    assert found["server_keys"] == {"h1:team/chat": KEY, "h1:team/code": KEY}
    assert found["verified"] == [{"host": "h1", "instance": "team/chat"}, {"host": "h1", "instance": "team/code"}]
    assert found["notes"] == ["h1/team/broken is left out: its child exited in error (the router's /v1/models says "
                              "failed)"]
    assert found["errors"] == []


def test_a_router_that_loads_nothing_on_demand_routes_its_loaded_models_only():
    row = {**ROUTER_ROW, "router_autoload": False}
    assert [row["instance"] for row in fleet_routes.served_rows(row) if "left_out" not in row] == ["team/chat"]
    assert fleet_routes.served_rows(ROW) == [ROW]
