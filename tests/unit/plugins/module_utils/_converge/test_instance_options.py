"""What an instance asks of the planner (step.instance_options): the typed probe options of either runtime."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step import Request, instance_options
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.docker import DockerAccess

SETTINGS = defaults()


def test_a_systemd_instance_is_planned_with_its_unit_and_key_file(tmp_path):
    settings = {**SETTINGS, "model_dirs": ["/srv/m"], "config_dir": str(tmp_path)}
    request = Request(name="main", preset={"MODEL": "a.gguf", "API_KEY": "k"}, settings=settings,
                      engine="/e/llama-server", environment={"GGML_X": "1"}, key="k-secret-1")
    options = instance_options(request, check_mode=False)
    assert (options.bin, options.home, list(options.model_dirs), options.instance, options.unit) == (
        "/e/llama-server", "/var/lib/llamafleet/instances/main", ["/var/lib/llamafleet/models", "/srv/m"], "main",
        "llama-server-main.service")
    assert options.preset == {"MODEL": "a.gguf"}
    assert options.environment == {"GGML_X": "1"}
    assert options.api_key_file == "/run/credentials/llama-server-main.service/api_key"
    assert (options.cache_dir, options.engine_official, options.write_cache) == (
        "/var/cache/llamafleet/main", False, True)
    assert (options.engine_image, options.container, options.docker) == ("", "", DockerAccess())
    # No state file yet: no earlier free-RAM reading to keep.
    assert options.stable_ram_avail_mib == 0
    assert instance_options(request, check_mode=True).write_cache is False


def test_the_free_ram_of_the_last_verified_plan_is_kept(tmp_path):
    (tmp_path / "instance-main.json").write_text('{"ram_avail_mib": 5000}')
    request = Request(name="main", preset={"MODEL": "a.gguf"}, settings={**SETTINGS, "config_dir": str(tmp_path)})
    assert instance_options(request, check_mode=True).stable_ram_avail_mib == 5000


def test_a_compose_instance_is_planned_in_its_image_with_its_container():
    settings = {**SETTINGS, "runtime": "compose", "image": "llama:cpu", "docker_host": "unix:///d.sock"}
    request = Request(name="main", preset={"MODEL": "a.gguf"}, settings=settings, key="k-secret-1")
    options = instance_options(request, check_mode=True)
    assert (options.bin, options.unit, options.container, options.engine_image) == (
        "/app/llama-server", "", "llama-server-main", "llama:cpu")
    assert (options.api_key_file, options.docker) == ("/run/secrets/llama-api-key",
                                                      DockerAccess(cli="docker", host="unix:///d.sock"))
    keyless = Request(name="main", preset={}, settings=settings, engine="/x/ls")
    assert (instance_options(keyless, check_mode=True).api_key_file, instance_options(keyless, True).bin) == (
        "", "/x/ls")


@pytest.mark.parametrize(
    ("switch", "preset", "metrics"),
    [
        pytest.param(False, {}, None, id="off-leaves-the-preset"),
        pytest.param(True, {}, "on", id="on-fills-it-in"),
        pytest.param(True, {"METRICS": "off"}, "off", id="the-preset-says-off"),
        pytest.param(True, {"METRICS": " "}, "on", id="blank-is-no-value"),
        pytest.param(False, {"METRICS": "on"}, "on", id="the-preset-says-on"),
        pytest.param(True, {"metrics": True}, "on", id="a-yaml-boolean-is-normalised"),
    ],
)
def test_the_metrics_switch_fills_in_what_the_preset_does_not_say(switch, preset, metrics):
    request = Request(name="main", preset={"MODEL": "a.gguf", **preset}, settings={**SETTINGS, "metrics": switch},
                      engine="/e/llama-server")
    assert instance_options(request, check_mode=True).preset.get("METRICS") == metrics
