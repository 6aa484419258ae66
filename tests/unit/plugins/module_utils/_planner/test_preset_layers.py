"""preset_version: one digest per preset, wherever it runs, never of a key. instance_key: an instance's key alone."""

import re

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import (
    PresetLayerError,
    instance_key,
    merge_preset,
    preset_and_key,
    preset_version,
)
from tests.unit.support.counting import CountingDict

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


# instance_key: preset_and_key's key alone, and refused alike.
KEYED_PRESETS = {"small": {"MODEL": "a.gguf", "API_KEY": "preset-key-01"}, "open": {"MODEL": "b.gguf"},
                 "odd": {"": "x"}}


@pytest.mark.parametrize("instance", [
    pytest.param({"name": "a", "preset": "small"}, id="the-presets-key"),
    pytest.param({"name": "a", "preset": "small", "api_key": " own-key-0001 "}, id="the-instances-own-key-first"),
    pytest.param({"name": "a", "preset": "open"}, id="no-key"),
    pytest.param({"name": "a", "preset": "open", "settings": {"api_key": "settings-key"}}, id="a-key-in-settings"),
    pytest.param({"name": "a", "preset": "small", "settings": {"Api_Key": ""}}, id="settings-blank-the-key"),
    pytest.param({"name": "a", "settings": {"MODEL": "c.gguf"}}, id="no-preset"),
    pytest.param({"name": "a", "preset": "small", "port": 8081}, id="placement-keys"),
    pytest.param({"name": "a", "preset": "nope"}, id="an-unknown-preset"),
    pytest.param({"name": "a", "preset": "odd"}, id="an-empty-key-name"),
    pytest.param({"name": "a", "preset": "small", "settings": ["API_KEY"]}, id="settings-not-a-mapping"),
    pytest.param(["not", "a", "mapping"], id="not-an-instance"),
])
def test_instance_key_is_preset_and_keys_key(instance):
    try:
        _preset, expected = preset_and_key(instance, KEYED_PRESETS)
    except PresetLayerError as err:
        with pytest.raises(PresetLayerError, match=re.escape(str(err))):
            instance_key(instance, KEYED_PRESETS)
    else:
        assert instance_key(instance, KEYED_PRESETS) == expected


class _Counted(CountingDict):
    """A preset that records the values read from it (a host's variable is rendered when a value is read), and
    refuses to be read whole."""

    def items(self):
        raise AssertionError("the whole preset was read")


def test_instance_key_reads_no_other_value():
    preset = _Counted({"MODEL": "a.gguf", "CTX": "{{ big }}", "api_key": "k-0001"})
    assert instance_key({"name": "a", "preset": "p"}, {"p": preset}) == "k-0001"
    assert preset.read == ["api_key"]


def test_merge_preset_only_keeps_the_names_given():
    assert merge_preset({"a": 1, "B": 2}, {"b": 3, "c": 4}, only=frozenset({"B"})) == {"B": 3}
    with pytest.raises(PresetLayerError, match="layer 1 has an empty key"):
        merge_preset({"a": 1}, {" ": 3}, only=frozenset({"B"}))
