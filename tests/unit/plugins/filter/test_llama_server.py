"""Filters of the llama_server role: instance_preset, instances_in_state, instances_stopped, model_files,
layout_path, service_account."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.filter.llama_server import (
    FilterModule,
    instance_preset,
    instances_in_state,
    instances_stopped,
    layout_path,
    service_account,
)


def test_registered_names():
    assert set(FilterModule().filters()) == {
        "instance_preset", "instances_in_state", "instances_stopped", "layout_path", "model_files",
        "service_account"}


@pytest.mark.parametrize(
    ("directory", "name", "path"),
    [
        ("/opt/llamafleet/venv", "runtime_marker", "/opt/llamafleet/venv/llamafleet-runtime.json"),
        ("/opt/llamafleet/engines/b1", "engine_marker", "/opt/llamafleet/engines/b1/.llamafleet-engine.json"),
        ("/var/lib/llamafleet/models", "model_marker_dir", "/var/lib/llamafleet/models/.llamafleet"),
        ("/opt/llamafleet/venv", "venv_python", "/opt/llamafleet/venv/bin/python"),
        ("", "venv_python", ""),  # no venv: the host's own interpreter, as the actions run it
        ("/opt/llamafleet/venv", "venv_wheels_dir", "/opt/llamafleet/venv.wheels"),
        ("/opt/llamafleet/engines", "engine_downloads_dir", "/opt/llamafleet/engines/.downloads"),
        ("/var/lib/llamafleet", "instances_dir", "/var/lib/llamafleet/instances"),
    ],
)
def test_layout_path(directory, name, path):
    assert layout_path(directory, name) == path


def test_layout_path_names_what_it_knows():
    with pytest.raises(AnsibleFilterError, match=r"'unit' is not one of engine_downloads_dir, engine_marker, "
                       r"instances_dir, model_marker_dir, runtime_marker, venv_python, venv_wheels_dir$"):
        layout_path("/x", "unit")


PRESETS = {"gemma": {"model": "g.gguf", "ctx": 4096, "port": 8080, "API_KEY": "k"}, "empty": {}}


def test_instance_preset_layers():
    instance = {"name": "a", "preset": "gemma", "settings": {"CTX": 2048, "extra_args": "--jinja"}, "port": 8091,
                "host": "127.0.0.1", "cuda_visible_devices": "0,1", "api_key": "not-a-preset-key"}
    assert instance_preset(instance, PRESETS) == {
        "MODEL": "g.gguf", "CTX": 2048, "PORT": 8091, "API_KEY": "k", "EXTRA_ARGS": "--jinja",
        "HOST": "127.0.0.1", "CUDA_VISIBLE_DEVICES": "0,1",
    }


def test_instance_preset_without_named_preset_and_empty_specials():
    assert instance_preset({"name": "b", "settings": {"ctx": 1}, "port": None, "host": ""}, None) == {"CTX": 1}


@pytest.mark.parametrize(
    ("instance", "presets", "message"),
    [
        pytest.param({"name": "c", "preset": "nope"}, PRESETS, "preset 'nope' is not in llama_server_presets",
                     id="unknown-preset"),
        pytest.param(["c"], PRESETS, "instance mapping", id="not-a-mapping"),
        pytest.param({"name": "c"}, ["gemma"], "mapping of preset name", id="presets-not-mapping"),
    ],
)
def test_instance_preset_errors(instance, presets, message):
    with pytest.raises(AnsibleFilterError, match=message):
        instance_preset(instance, presets)


def test_instances_in_state_keeps_order_and_defaults_to_present():
    instances = [{"name": "a"}, {"name": "b", "state": "absent"}, {"name": "c", "state": "present"},
                 {"name": "d", "state": None}]
    assert [i["name"] for i in instances_in_state(instances)] == ["a", "c", "d"]
    assert [i["name"] for i in instances_in_state(instances, "absent")] == ["b"]


@pytest.mark.parametrize("instances", [pytest.param("a", id="string"), pytest.param({"name": "a"}, id="mapping"),
                                       pytest.param(["a"], id="item-not-mapping")])
def test_instances_in_state_refuses_bad_input(instances):
    with pytest.raises(AnsibleFilterError):
        instances_in_state(instances)


def test_instances_stopped_turns_the_present_ones_and_keeps_order():
    instances = [{"name": "a", "port": 8080}, {"name": "b", "state": "absent"}, {"name": "c", "state": "present"},
                 {"name": "d", "state": "stopped"}]
    assert instances_stopped(instances) == [{"name": "a", "port": 8080, "state": "stopped"},
                                            {"name": "b", "state": "absent"}, {"name": "c", "state": "stopped"},
                                            {"name": "d", "state": "stopped"}]
    assert instances[0] == {"name": "a", "port": 8080}  # the input is not changed
    assert instances_stopped([]) == []


@pytest.mark.parametrize("instances", [pytest.param("a", id="string"), pytest.param(["a"], id="item-not-mapping")])
def test_instances_stopped_refuses_bad_input(instances):
    with pytest.raises(AnsibleFilterError, match="instances_in_state"):
        instances_stopped(instances)


def test_model_files():
    from ansible_collections.llamafleet.llamacpp.plugins.filter.llama_server import model_files  # noqa: PLC0415

    assert model_files([{"url": "https://h/a/m.gguf?x=1#f", "checksum": "sha256:ab"},
                        {"url": "file:///s/x", "checksum": "sha256:cd", "name": "y.gguf"}], "/models") == [
        {"url": "https://h/a/m.gguf?x=1#f", "checksum": "sha256:ab", "path": "/models/m.gguf"},
        {"url": "file:///s/x", "checksum": "sha256:cd", "path": "/models/y.gguf"},
    ]
    bad_inputs = ("x", [{"url": "u"}], [{"url": "https://h/", "checksum": "c"}],
                  [{"url": "u", "checksum": "c", "name": "a/b"}])
    for bad in bad_inputs:
        with pytest.raises(AnsibleFilterError, match="model_files"):
            model_files(bad, "/models")


def test_service_account_is_the_layout_table():
    settings = {"user": "u", "group": "g", "home": "/h", "models_dir": "/m", "config_dir": "/c",
                "credentials_dir": "/c/k", "runtime": "systemd", "compose_dir": "/c/compose"}
    account = service_account(settings)
    assert (account["user"], account["shell"]) == ("u", "/usr/sbin/nologin")
    assert [d["path"] for d in account["directories"]] == ["/h", "/h/instances", "/m", "/c", "/c/k"]


def test_service_account_names_a_missing_setting():
    with pytest.raises(AnsibleFilterError, match="service_account: the role's settings lack 'models_dir'"):
        service_account({"user": "u", "group": "g", "home": "/h"})
