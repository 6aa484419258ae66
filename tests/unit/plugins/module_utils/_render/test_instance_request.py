"""What an instance asks of the planner, and the texts beside its service (instance_request.py)."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import (
    credential_content,
    health_timeout_s,
    plan_request,
    state_content,
)

SETTINGS = defaults()


def test_a_systemd_instance_is_planned_with_its_unit_and_key_file():
    request = plan_request("main", {"MODEL": "a.gguf", "API_KEY": "k"}, {"GGML_X": "1"}, has_key=True,
                           engine="/e/llama-server", settings={**SETTINGS, "model_dirs": ["/srv/m"]})
    assert request == {
        "bin": "/e/llama-server", "home": "/var/lib/llamafleet/instances/main",
        "model_dirs": ["/var/lib/llamafleet/models", "/srv/m"], "instance": "main",
        "unit": "llama-server-main.service", "preset": {"MODEL": "a.gguf"}, "environment": {"GGML_X": "1"},
        "api_key_file": "/run/credentials/llama-server-main.service/api_key", "engine_official": False,
        "cache_dir": "/var/cache/llamafleet/main", "state_file": "/etc/llamafleet/instance-main.json",
    }


def test_a_compose_instance_is_planned_in_its_image_with_its_container():
    settings = {**SETTINGS, "runtime": "compose", "image": "llama:cpu", "docker_host": "unix:///d.sock"}
    request = plan_request("main", {"MODEL": "a.gguf"}, {}, has_key=True, engine="", settings=settings)
    assert (request["bin"], request["unit"], request["container"], request["engine_image"]) == (
        "/app/llama-server", "", "llama-server-main", "llama:cpu")
    assert (request["api_key_file"], request["docker_host"]) == ("/run/secrets/llama-api-key", "unix:///d.sock")
    assert plan_request("main", {}, {}, has_key=False, engine="/x/ls", settings=settings)["api_key_file"] == ""


@pytest.mark.parametrize(
    ("switch", "preset", "metrics"),
    [
        pytest.param(False, {}, None, id="off-leaves-the-preset"),
        pytest.param(True, {}, "on", id="on-fills-it-in"),
        pytest.param(True, {"METRICS": "off"}, "off", id="the-preset-says-off"),
        pytest.param(True, {"METRICS": " "}, "on", id="blank-is-no-value"),
        pytest.param(False, {"METRICS": "on"}, "on", id="the-preset-says-on"),
    ],
)
def test_the_metrics_switch_fills_in_what_the_preset_does_not_say(switch, preset, metrics):
    request = plan_request("main", {"MODEL": "a.gguf", **preset}, {}, has_key=False, engine="/e/llama-server",
                           settings={**SETTINGS, "metrics": switch})
    assert request["preset"].get("METRICS") == metrics


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
