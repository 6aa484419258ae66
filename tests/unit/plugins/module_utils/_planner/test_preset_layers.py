"""preset_version: one digest per preset, wherever it runs, never of a key."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import preset_version

BASE = {"MODEL": "qwen3-8b.gguf", "CTX": "4096", "PARALLEL": "2"}


@pytest.mark.parametrize(
    ("other", "same"),
    [
        pytest.param({**BASE}, True, id="identical"),
        pytest.param({"PARALLEL": "2", "CTX": "4096", "MODEL": "qwen3-8b.gguf"}, True, id="key-order"),
        pytest.param({**BASE, "CTX": 4096}, True, id="yaml-int-is-its-text"),
        pytest.param({"model": "qwen3-8b.gguf", "ctx": "4096", "parallel": "2"}, True, id="key-case"),
        pytest.param({**BASE, "PORT": "8081", "HOST": "10.0.0.2", "CUDA_VISIBLE_DEVICES": "1"}, True,
                     id="placement-left-out"),
        pytest.param({**BASE, "API_KEY": "secret-key-123", "EXTERNAL_KEY": "x"}, True, id="keys-left-out"),
        pytest.param({**BASE, "CTX": "2048"}, False, id="context-changes-it"),
        pytest.param({**BASE, "METRICS": "on"}, False, id="a-new-key-changes-it"),
        pytest.param({**BASE, "EXTRA_ARGS": ""}, False, id="an-empty-key-is-still-written"),
    ],
)
def test_preset_version(other, same):
    assert (preset_version(other) == preset_version(BASE)) is same


def test_preset_version_is_twelve_hex_digits():
    version = preset_version(BASE)
    assert len(version) == 12
    assert int(version, 16) >= 0
