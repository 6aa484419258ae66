"""The gateway's settings (settings.py): typed, bounded, and refused with the variable, the value and the form."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import settings as gateway

KEYS = {"api_keys": ["client-key-1"]}


def test_defaults_with_a_key():
    found, errors = gateway.gateway_settings(KEYS)
    assert errors == []
    assert found.port == 8000
    assert found.api_keys == ("client-key-1",)
    assert found.listen_address == "0.0.0.0"
    assert found.queue_timeout_s == 60
    assert found.max_body_bytes == 1048576


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ({}, "llama_gateway_api_keys is empty"),
        ({"allow_open": True}, ""),
        ({"allow_open": "yes"}, "llama_gateway_allow_open='yes' is not valid: expected true or false"),
        ({**KEYS, "port": 0}, "llama_gateway_port=0 is not valid: expected a whole number from 1 to 65535"),
        ({**KEYS, "port": "8000"}, "llama_gateway_port='8000' is not valid: expected a whole number"),
        ({**KEYS, "port": True}, "expected a whole number"),
        ({**KEYS, "queue_timeout_s": 0}, "from 1 to 3600"),
        ({**KEYS, "max_body_bytes": 100}, "from 4096 to 67108864"),
        ({**KEYS, "listen_address": "0.0.0.0\n"}, "expected an IP address"),
        ({**KEYS, "listen_address": "example.org"}, "expected an IP address"),
        ({**KEYS, "listen_address": "::"}, ""),
        ({**KEYS, "tls_certificate": "/etc/ssl/gw.pem"}, ""),
        ({**KEYS, "tls_certificate": "relative.pem"}, "llama_gateway_tls_certificate='relative.pem' is not valid"),
        ({**KEYS, "tls_certificate": "/etc/ssl/a b.pem"}, "is not valid"),
        ({**KEYS, "lua_path": ""}, "llama_gateway_lua_path='' is not valid"),
        ({**KEYS, "admin_socket": "/run/x'y"}, "is not valid"),
        ({**KEYS, "run_user": "haproxy\n"}, "a user or group name"),
        ({**KEYS, "run_user": ""}, ""),
        ({**KEYS, "default_model": "gemma 3"}, "llama_gateway_default_model='gemma 3' is not valid"),
        ({**KEYS, "default_model": "gemma-3"}, ""),
        ({**KEYS, "metrics_port": 8000}, "is the gateway's own port"),
        ({**KEYS, "bogus": 1}, "llama_gateway_bogus: not a gateway setting"),
        ({"api_keys": "client-key-1"}, "expected a list of strings"),
        ({"api_keys": ["short"]}, "at least 8 characters"),
        ({"api_keys": ["has space in it"]}, "keys of letters"),
    ],
)
def test_refusals(raw, error):
    _found, errors = gateway.gateway_settings(raw)
    assert (error in " ".join(errors)) if error else errors == []


def test_a_refused_key_is_not_shown():
    _found, errors = gateway.gateway_settings({"api_keys": ["secret with blank"]})
    assert errors
    assert "secret with blank" not in errors[0]
    assert "not shown" in errors[0]


def test_argument_spec_hides_keys():
    assert gateway.BY_NAME["api_keys"].spec() == {"type": "list", "default": [], "elements": "str", "no_log": True}
    assert "api_keys" not in gateway.module_settings_spec()["options"]
    assert set(gateway.BY_NAME) == set(gateway.GatewaySettings.__dataclass_fields__)
