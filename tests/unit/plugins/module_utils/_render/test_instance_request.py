"""The texts beside an instance's service, and its health wait (instance_request.py)."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import (
    credential_content,
    health_timeout_s,
    state_content,
)


def test_texts_beside_the_service():
    assert credential_content("key", "k1") == "k1\n"
    assert credential_content("env", "k1") == "LLAMA_API_KEY=k1\n"
    assert json.loads(state_content({"ram_avail_mib": 123})) == {"ram_avail_mib": 123}
    # As the role's to_nice_json wrote it, so an upgrade leaves the file as it is.
    assert state_content({}) == '{\n    "ram_avail_mib": 0\n}\n'


@pytest.mark.parametrize(
    ("model_bytes", "expected"), [(0, 60), (1, 61), (1 << 30, 80), ((1 << 30) + 1, 81), (-5, 60), (250 << 20, 65)]
)
def test_health_timeout_grows_with_the_model(model_bytes, expected):
    assert health_timeout_s(model_bytes, 60, 20) == expected
