"""EXTERNAL, the API key in effect, the --host, and the /slots safety rule."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import access as rule
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts


@pytest.mark.parametrize(
    ("preset", "extra", "key_file", "safe"),
    [
        pytest.param({}, [], "", False, id="default-all-interfaces"),
        pytest.param({"HOST": "127.0.0.1"}, [], "", True, id="loopback"),
        pytest.param({"HOST": " [::1] "}, [], "", True, id="ipv6-brackets"),
        pytest.param({"HOST": "localhost"}, [], "", True, id="localhost"),
        pytest.param({"HOST": "127.0.0.1"}, ["--host", "0.0.0.0"], "", False, id="extra-overrides"),
        pytest.param({"HOST": "0.0.0.0"}, ["--host=127.0.0.1"], "", True, id="extra-equals"),
        pytest.param({"HOST": "10.0.0.5"}, [], "/run/credentials/x/api_key", True, id="key-file"),
        pytest.param({"HOST": "10.0.0.5", "API_KEY": " s3cret "}, [], "", True, id="preset-key"),
        pytest.param({"HOST": "10.0.0.5", "API_KEY": "  "}, [], "", False, id="blank-key"),
    ],
)
def test_slot_save_safe(preset, extra, key_file, safe):
    assert rule.slot_save_safe(preset, extra, HostFacts(api_key_file=key_file)) is safe


@pytest.mark.parametrize(
    ("preset", "external"), [({"EXTERNAL": " 1 "}, True), ({"EXTERNAL": "true"}, False), ({}, False)]
)
def test_is_external(preset, external):
    assert rule.is_external(preset) is external
