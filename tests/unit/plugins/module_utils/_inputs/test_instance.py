"""One instance's inputs (instance.py), as the role, the instance action and the modules all check them."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import (
    instance_errors,
    instances_errors,
    step_errors,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults

KEY = "k-0123456789"
PRESETS = {"small": {"MODEL": "m.gguf"}}

CASES = [
    ("path in the name", {"name": "../../../../tmp/evil"}, "instance name '../../../../tmp/evil'"),
    ("newline after the name", {"name": "main\n"}, "instance name 'main\\n'"),
    ("empty name", {"name": ""}, "instance name ''"),
    ("no name", {}, "instance name ''"),
    ("state", {"state": "gone"}, "state 'gone'; accepted: present, stopped or absent"),
    ("key with a newline", {"api_key": "good\nLD_PRELOAD=/tmp/evil.so"}, "(api_key): the API key is refused"),
    ("one-character key", {"api_key": "x"}, "a key has at least 8"),
    ("key in the preset", {"settings": {"API_KEY": "a,b-cdefgh"}}, "(API_KEY): the API key is refused"),
    ("key spelt API-KEY", {"settings": {"API-KEY": KEY}}, "preset key 'API-KEY' looks like API_KEY"),
    ("key spelt APIKEY", {"settings": {"apikey": KEY}}, "preset key 'APIKEY' looks like API_KEY"),
    ("key spelt LLAMA_API_KEY", {"settings": {"LLAMA_API_KEY": KEY}}, "'LLAMA_API_KEY' looks like API_KEY"),
    ("external key spelt", {"settings": {"EXTERNAL-KEY": KEY}}, "looks like EXTERNAL_KEY"),
    ("--api_key in EXTRA_ARGS", {"settings": {"EXTRA_ARGS": f"--api_key {KEY}"}}, "must not carry --api-key"),
    ("--api-key= in EXTRA_ARGS", {"settings": {"EXTRA_ARGS": f"--api-key={KEY}"}}, "must not carry --api-key"),
    ("--api_key_file in EXTRA_ARGS", {"settings": {"EXTRA_ARGS": "--api_key_file /etc/shadow"}},
     "must not carry --api-key-file"),
    ("-hft in EXTRA_ARGS", {"settings": {"EXTRA_ARGS": "-hft hf_abc"}}, "must not carry --hf-token"),
    ("key in the environment", {"environment": {"LLAMA_API_KEY": KEY}}, "LLAMA_API_KEY names a key or a token"),
    ("key file in the environment", {"environment": {"LLAMA_ARG_API_KEY_FILE": "/etc/shadow"}},
     "LLAMA_ARG_API_KEY_FILE names a key"),
    ("variable name with a newline", {"environment": {"X\nY": "1"}}, "the name 'X\\nY' is not a variable name"),
    ("NUL in a value", {"environment": {"X": "a\0"}}, "the value of X: it holds a NUL"),
    ("unknown preset", {"preset": "nope"}, "preset 'nope' is not in llama_server_presets"),
    ("not UTF-8", {"settings": {"EXTRA_ARGS": "--alias \udcff"}}, "preset key 'EXTRA_ARGS': it is not valid UTF-8"),
    ("NUL in a preset value", {"settings": {"CTX": "4096\0"}}, "preset key 'CTX': it holds a NUL"),
    ("over 64 KiB", {"settings": {"EXTRA_ARGS": "--alias " + "a" * 70000}}, "(at most 65536)"),
]


def instance(**change):
    return {"name": "main", "preset": "small", "api_key": KEY, **change}


def test_a_good_instance_passes():
    assert instance_errors(instance(), PRESETS) == []
    assert instance_errors({"name": "old", "state": "absent"}, PRESETS) == []
    # A stopped instance is not planned: its preset is not read, its name and environment are.
    assert instance_errors({"name": "off", "state": "stopped", "preset": "missing"}, PRESETS) == []
    assert "instance name '../x'" in instance_errors({"name": "../x", "state": "stopped"}, PRESETS)[0]


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_hostile_input_is_refused_naming_it(change, expected):
    errors = instance_errors(instance(**change) if change else {}, PRESETS)
    assert any(expected in error for error in errors), errors
    assert not any(KEY in error for error in errors)


@pytest.mark.parametrize(
    "ports",
    [("8080", "08080"), (8080, "+8080"), (8080, " 8080"), (8080, None)],
    ids=["leading zero", "plus sign", "blank", "default"],
)
def test_ports_compare_as_the_numbers_the_engine_reads(ports):
    pair = [{"name": "a", "port": ports[0]}, {"name": "b", **({"port": ports[1]} if ports[1] else {})}]
    assert any("a and b both plan port 8080" in e for e in instances_errors(pair, {}))


def test_extra_args_port_wins_over_port():
    pair = [{"name": "a", "port": 9090, "settings": {"EXTRA_ARGS": "--port 8080"}}, {"name": "b"}]
    assert any("both plan port 8080" in e for e in instances_errors(pair, {}))
    apart = [{"name": "a", "port": 8080, "settings": {"EXTRA_ARGS": "--port 9090"}}, {"name": "b"}]
    assert instances_errors(apart, {}) == []


def test_the_step_checks_its_settings_and_its_instance_before_anything():
    params = {"name": "main", "preset": {"CTX": "4096"}, "api_key": KEY, "environment": {},
              "settings": {**defaults(), "home": "/var/lib/llamafleet\rExecStartPre=+/bin/sh"}}
    assert [e.split(" =")[0] for e in step_errors(params)] == ["llama_server_home (settings.home)"]
    assert step_errors({**params, "settings": defaults()}) == []
    assert step_errors({**params, "settings": defaults(), "name": "../evil"})[0].startswith("instance name")
