"""The gateway's judgement from a reading (_gateway/gateway_judgement.py), and where it answers (gateway_urls)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.gateway_judgement import (
    digest,
    gateway_judgement,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.haproxy_config import gateway_urls

TEXTS = {"config": "global\n", "routes_file": "{}\n", "lua": "-- lua\n"}
CURRENT = {"config": digest("global\n"), "routes": digest("{}\n"), "lua": digest("-- lua\n"), "lua_kept": True,
           "state_file": True, "running": True, "answered": True, "out_of_rotation": ["h9:old"]}


@pytest.mark.parametrize(("reading", "verified", "why"), [
    pytest.param(CURRENT, ["h1:main"], [], id="current"),
    pytest.param(None, [], ["its host was not read in this run's judge"], id="not-read"),
    pytest.param({**CURRENT, "config": ""}, [], ["its configuration would change"], id="no-config"),
    pytest.param({**CURRENT, "routes": digest("{ }\n")}, [], ["its routes file would change"], id="routes"),
    pytest.param({**CURRENT, "lua_kept": False}, [], ["its Lua actions would change"], id="lua-owner"),
    pytest.param({**CURRENT, "state_file": False}, [], ["the file of its servers' states is missing"], id="state"),
    pytest.param({**CURRENT, "running": False, "answered": False}, [],
                 ["HAProxy is not running, or does not start at boot"], id="stopped"),
    pytest.param({**CURRENT, "answered": False}, [], ["HAProxy's runtime API did not answer"], id="no-answer"),
    pytest.param(CURRENT, ["h9:old", "h1:main"], ["verified servers are out of rotation: h9:old"], id="drained"),
    pytest.param({**CURRENT, "config": "", "lua": ""}, [],
                 ["its configuration would change", "its Lua actions would change"], id="first-things-first"),
])
def test_gateway_judgement(reading, verified, why):
    assert gateway_judgement(reading, **TEXTS, verified=verified) == why


def test_a_gateway_keeping_hosts_servers_is_left_to_the_role():
    assert gateway_judgement(CURRENT, **TEXTS, verified=[], keep_hosts=["h2", "h3"]) == [
        "it keeps the servers of hosts this run has not finished: h2, h3"]


@pytest.mark.parametrize(("settings", "host", "urls"), [
    ({"listen_address": "0.0.0.0", "port": 8000, "metrics_port": 0, "tls_certificate": ""}, "10.0.0.9",
     ("http://10.0.0.9:8000", "")),
    ({"listen_address": "::", "port": "8000", "metrics_port": "8405", "tls_certificate": "/etc/gw.pem"},
     "fd00::9", ("https://[fd00::9]:8000", "https://[fd00::9]:8405/metrics")),
    ({"listen_address": "10.1.1.1", "port": 443, "metrics_port": 9101, "tls_certificate": ""}, "gw.example",
     ("http://10.1.1.1:443", "http://10.1.1.1:9101/metrics")),
    ({"listen_address": "0.0.0.0", "port": 8000, "metrics_port": 8405}, "gw.example",
     ("http://gw.example:8000", "http://gw.example:8405/metrics")),
])
def test_gateway_urls(settings, host, urls):
    found = gateway_urls(settings, host)
    assert (found["url"], found["metrics_url"]) == urls
