"""A router instance's inputs (_inputs/router.py), through instance_errors as every entry point checks them, and the
wire form the instance step takes."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import (
    instance_errors,
    instances_errors,
    step_errors,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.router import (
    request_errors,
    router_key,
    router_request,
    step_inputs,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import PresetLayerError

KEY = "k-0123456789"
PRESETS = {"chat": {"MODEL": "chat.gguf", "CTX": "4096"}, "coder": {"model": "coder.gguf"},
           "keyed": {"MODEL": "k.gguf", "API_KEY": KEY}, "other-key": {"MODEL": "k.gguf", "API_KEY": "k-9876543210"}}


def router(**change):
    models = ["chat", {"name": "code", "preset": "coder", "settings": {"CTX": 8192}}]
    return {"name": "team", "port": 8090, "api_key": KEY, "models": models, **change}


CASES = [
    ("no models", {"models": []}, "models must be a non-empty list"),
    ("models not a list", {"models": "chat"}, "models must be a non-empty list"),
    ("unknown preset", {"models": ["nope"]}, "model nope: preset 'nope' is not in llama_server_presets"),
    ("entry of another type", {"models": [3]}, "each entry of models is a preset's name or a mapping"),
    ("unknown entry key", {"models": [{"name": "a", "preset": "chat", "ctx": 1}]}, "unknown key(s) ctx"),
    ("id with a bracket", {"models": [{"name": "a]b", "preset": "chat"}]}, "router model 'a]b': a model id"),
    ("id with a newline", {"models": [{"name": "a\nb", "preset": "chat"}]}, "router model 'a\\nb'"),
    ("id default", {"models": [{"name": "default", "preset": "chat"}]}, "and not 'default'"),
    ("twice", {"models": ["chat", {"name": "chat", "preset": "coder"}]}, "given more than once: chat"),
    ("own preset", {"preset": "chat"}, "takes no preset"),
    ("own settings", {"settings": {"CTX": 1}}, "takes no settings"),
    ("own cards", {"cuda_visible_devices": "0"}, "takes no cuda_visible_devices"),
    ("models_max negative", {"models_max": -1}, "models_max -1: accepted: a whole number of models"),
    ("models_max text", {"models_max": "two"}, "models_max 'two'"),
    ("models_max bool", {"models_max": True}, "models_max True"),
    ("sleep 0", {"sleep_idle_seconds": 0}, "sleep_idle_seconds 0: accepted: a whole number of seconds"),
    ("autoload text", {"models_autoload": "yes"}, "models_autoload 'yes': accepted: true or false"),
    ("a model's hostile value", {"models": [{"name": "a", "preset": "chat", "settings": {"CTX": "1\0"}}]},
     "instance team (model a): preset key 'CTX': it holds a NUL"),
    ("a model's key flag", {"models": [{"name": "a", "settings": {"MODEL": "m", "EXTRA_ARGS": "--api-key x"}}]},
     "must not carry --api-key"),
    ("another key in a model's preset", {"models": ["other-key"]}, "a router has one key"),
    ("a bad router key", {"api_key": "x"}, "(api_key): the API key is refused"),
]


def test_a_good_router_passes():
    assert instance_errors(router(), PRESETS) == []
    assert instance_errors(router(models_max=0, models_autoload=False, sleep_idle_seconds=60), PRESETS) == []
    # The same key in a model's preset (a preset shared with an instance of one model) is the router's key.
    assert instance_errors(router(models=["keyed", "chat"]), PRESETS) == []


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_bad_router_input_is_refused_naming_it(change, expected):
    errors = instance_errors(router(**change), PRESETS)
    assert any(expected in error for error in errors), errors


def test_a_router_port_counts_among_the_host_ports():
    errors = instances_errors([router(), {"name": "main", "preset": "chat", "port": 8090}], PRESETS)
    assert any("both plan port 8090" in error for error in errors), errors


def test_the_wire_form_layers_each_model_and_keeps_keys_apart():
    models = ["keyed", {"name": "code", "preset": "coder", "settings": {"CTX": 8192}}]
    preset, key, request = step_inputs(router(models=models), PRESETS)
    assert preset == {"PORT": 8090}
    assert key == KEY
    assert request == {"models": [{"name": "keyed", "preset": {"MODEL": "k.gguf"}},
                                  {"name": "code", "preset": {"MODEL": "coder.gguf", "CTX": 8192}}],
                       "autoload": True}
    assert router_request(router(models_max=2, models_autoload=False, sleep_idle_seconds=30), PRESETS) == {
        "models": [{"name": "chat", "preset": {"MODEL": "chat.gguf", "CTX": "4096"}},
                   {"name": "code", "preset": {"MODEL": "coder.gguf", "CTX": 8192}}],
        "autoload": False, "models_max": 2, "sleep_idle_seconds": 30}
    # An instance of one model: no router option.
    assert step_inputs({"name": "main", "preset": "chat"}, PRESETS)[2] is None


def test_a_router_key_differing_from_a_model_preset_key_is_refused():
    with pytest.raises(PresetLayerError, match="a router has one key"):
        router_key(router(models=["other-key"]), PRESETS)


REQUEST_CASES = [
    ("none", {"models": []}, "models must be a non-empty list"),
    ("bad id", {"models": [{"name": "x y", "preset": {}}]}, "router model 'x y'"),
    ("twice", {"models": [{"name": "a", "preset": {}}, {"name": "a", "preset": {}}]}, "more than once: a"),
    ("preset not a mapping", {"models": [{"name": "a", "preset": "chat"}]}, "each model is a mapping"),
    ("models_max", {"models": [{"name": "a", "preset": {}}], "models_max": -2}, "models_max -2"),
    ("sleep", {"models": [{"name": "a", "preset": {}}], "sleep_idle_seconds": 0}, "sleep_idle_seconds 0"),
]


@pytest.mark.parametrize(("router_option", "expected"), [c[1:] for c in REQUEST_CASES],
                         ids=[c[0] for c in REQUEST_CASES])
def test_the_module_alone_refuses_a_bad_router_option(router_option, expected):
    assert any(expected in error for error in request_errors(router_option)), request_errors(router_option)


def test_the_step_checks_each_model_preset_as_the_role_does():
    params = {"name": "team", "settings": defaults(), "preset": {"PORT": "8090"},
              "router": {"models": [{"name": "a", "preset": {"MODEL": "m", "EXTRA_ARGS": "--api-key-file /x"}}]}}
    assert any("must not carry --api-key-file" in error for error in step_errors(params))
    params["router"] = {"models": [{"name": "a", "preset": {"MODEL": "m"}}]}
    assert step_errors(params) == []
