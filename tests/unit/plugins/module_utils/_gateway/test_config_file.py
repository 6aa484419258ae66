"""The gateway host's files decided from their text (config_file.py): the routes file's merge for kept hosts, the
foreign-file rule, the routes file's form and the refusals."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import config_file
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import Server
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import gateway_settings

KEY = "engine-key-0001"


def _entry(host, instance="main", model="tiny", address="10.0.0.1"):
    return {"host": host, "instance": instance, "address": address, "port": 8080, "slots": 2, "model": model}


ROUTES_FILE = json.dumps({"servers": [_entry("h2"), _entry("h2", "big", "big"), _entry("h1", model="stale")],
                          "server_keys": {"h2:main": KEY, "h2:big": "big-key-0001", "h1:main": "stale-key-01"}})


GIVEN = [_entry("h1"), _entry("h2", address="10.9.9.9")]
GIVEN_KEYS = {"h1:main": KEY, "h2:main": "given-key-1"}


@pytest.mark.parametrize(
    ("routes_before", "keep", "servers", "keys"),
    [
        # Nothing kept: the given servers and keys, whatever the file says.
        (ROUTES_FILE, [], ["h1/main@10.0.0.1", "h2/main@10.9.9.9"], GIVEN_KEYS),
        # A kept host: its servers and keys from the file, never the given ones; the others' stay as given. Each host
        # keeps its place in the file (h2 came first there).
        (ROUTES_FILE, ["h2"], ["h2/main@10.0.0.1", "h2/big@10.0.0.1", "h1/main@10.0.0.1"],
         {"h1:main": KEY, "h2:main": KEY, "h2:big": "big-key-0001"}),
        # A kept host the file does not list keeps nothing.
        (ROUTES_FILE, ["h3"], ["h1/main@10.0.0.1", "h2/main@10.9.9.9"], GIVEN_KEYS),
        # No file, one that is not JSON, or one without servers: as if it listed nothing.
        ("", ["h2"], ["h1/main@10.0.0.1"], {"h1:main": KEY}),
        ("{not json", ["h2"], ["h1/main@10.0.0.1"], {"h1:main": KEY}),
        ("{}", ["h2"], ["h1/main@10.0.0.1"], {"h1:main": KEY}),
    ],
)
def test_kept_routes(routes_before, keep, servers, keys):
    entries, found_keys = config_file.kept_routes(routes_before, GIVEN, GIVEN_KEYS, keep)
    assert [f"{entry['host']}/{entry['instance']}@{entry['address']}" for entry in entries] == servers
    assert found_keys == keys


def test_a_run_that_keeps_a_host_writes_what_a_run_over_the_whole_fleet_writes():
    whole = [_entry("h1"), _entry("h1", "b-0"), _entry("h2", address="10.0.0.2")]
    keys = {"h1:main": KEY, "h1:b-0": KEY, "h2:main": KEY}
    routes = config_file.routes_text(Server.from_dict(entry, keys[f"{entry['host']}:{entry['instance']}"])
                                     for entry in whole)
    # --limit h2: h1 is kept from the file, h2 given; the result is in the whole run's order, h1 first.
    entries, found_keys = config_file.kept_routes(routes, [whole[2]], {"h2:main": KEY}, ["h1"])
    assert entries == whole
    assert found_keys == keys


@pytest.mark.parametrize(
    ("before", "copy_exists", "keeps"),
    [
        ("", False, False),  # no file: nothing to keep
        ("# Debian's own\nglobal\n", False, True),  # not ours: kept
        ("# Debian's own\nglobal\n", True, False),  # kept already: the first foreign file is the one kept
        (f"# {config_file.HEADER}\nglobal\n", False, False),  # ours
        (f"global\n# {config_file.HEADER}\n", False, True),  # the header must open the file
    ],
)
def test_keeps_foreign_copy(before, copy_exists, keeps):
    assert config_file.keeps_foreign_copy(before, copy_exists) is keeps


def test_paths():
    assert config_file.routes_path("/etc/haproxy/haproxy.cfg") == "/etc/haproxy/haproxy.cfg.routes.json"
    assert config_file.foreign_copy_path("/etc/haproxy/haproxy.cfg") == "/etc/haproxy/haproxy.cfg.before-llamafleet"


def test_routes_text_is_stable_and_keeps_keys_apart():
    servers = [Server.from_dict(_entry("h2"), KEY), Server.from_dict(_entry("h1", model="open"))]
    text = config_file.routes_text(servers)
    assert text == config_file.routes_text(servers)
    assert json.loads(text) == {"servers": [_entry("h2"), _entry("h1", model="open")],
                                "server_keys": {"h2:main": KEY}}
    assert text.startswith('{\n "server_keys": {\n  "h2:main"')  # sorted keys, one-space indent


def test_masked():
    assert config_file.masked(f"a {KEY} b {KEY}", ["", KEY]) == "a ******** b ********"


def _settings():
    settings, errors = gateway_settings({"api_keys": ["client-key-0001"]})
    assert errors == []
    return settings


@pytest.mark.parametrize(
    ("servers", "keys", "error"),
    [
        ([{**_entry("h1"), "port": None}], {}, "servers[0]: port missing"),
        ([_entry("h1"), {"host": "h2", "instance": "main"}], {}, "servers[1]: address, port, slots, model missing"),
        ([_entry("h1", address="127.0.0.1")], {}, "h1/main is left out: it listens on 127.0.0.1 only"),
        ([{**_entry("h1"), "slots": 0}], {}, "h1/main is left out: its engine does not answer /props"),
        ([_entry("h1", model="a b")], {}, "h1/main: its engine lists the model as 'a b'"),
        ([_entry("h1"), _entry("h2")], {"h1:main": KEY, "h2:main": "other-key-01"}, "have different API keys"),
        ([_entry("h1")], {"h1:main": "bad key"}, "h1/main: its API key cannot be sent by the gateway"),
    ],
)
def test_gateway_files_refuse(servers, keys, error):
    files, errors = config_file.gateway_files(_settings(), "", servers=servers, server_keys=keys, keep_hosts=[],
                                              notes=[])
    assert files is None
    assert any(found.startswith(error) or error in found for found in errors), errors
    assert not any("bad key" in found for found in errors)


def test_gateway_files_render_the_routes_with_the_notes_in_the_header():
    files, errors = config_file.gateway_files(
        _settings(), ROUTES_FILE, servers=[_entry("h1")], server_keys={"h1:main": KEY}, keep_hosts=["h2"],
        notes=["h3 is left out:\nno report"])
    assert errors == []
    assert files.config.startswith(f"# {config_file.HEADER}\n# h3 is left out: no report\n")
    assert [model.name for model in files.routes.models] == ["big", "tiny"]
    assert json.loads(files.routes_file)["server_keys"] == {"h1:main": KEY, "h2:main": KEY, "h2:big": "big-key-0001"}
    assert config_file.routed_models(files.routes) == [
        {"name": "big", "backend": "model_big", "replicas": ["h2/big"]},
        {"name": "tiny", "backend": "model_tiny", "replicas": ["h1/main", "h2/main"]}]


@pytest.mark.parametrize(
    ("text", "keys"),
    [('{"servers": [], "server_keys": {"h1:main": "k-0001-aaaa", "h2:main": "k-0002-bbbb"}}',
      ["k-0001-aaaa", "k-0002-bbbb"]),
     ("", []), ("not json", []), ("[1]", []), ('{"server_keys": "x"}', [])],
    ids=["routes file", "none", "not json", "not an object", "keys not a mapping"],
)
def test_routes_keys(text, keys):
    assert config_file.routes_keys(text) == keys
