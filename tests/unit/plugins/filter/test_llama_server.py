"""Filters of the llama_server role: merge_preset and plan_summary."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.filter.llama_server import (
    FilterModule,
    instance_preset,
    instances_in_state,
    merge_preset,
    plan_summary,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.listen import health_target, loopback_only


def test_merge_preset_upper_cases_and_later_layers_win():
    merged = merge_preset({"ctx": 8192, "Ngl": 99, "EXTRA_ARGS": "--jinja"}, None, {"CTX": 4096}, {"port": 8081})
    assert merged == {"CTX": 4096, "NGL": 99, "EXTRA_ARGS": "--jinja", "PORT": 8081}


def test_merge_preset_keeps_values_as_they_are():
    assert merge_preset({"reasoning": True, "api_key": None}) == {"REASONING": True, "API_KEY": None}


@pytest.mark.parametrize(
    "layers",
    [pytest.param(([1, 2],), id="list-layer"), pytest.param(({" ": 1},), id="empty-key")],
)
def test_merge_preset_refuses_bad_layers(layers):
    with pytest.raises(AnsibleFilterError):
        merge_preset({}, *layers)


PLAN = {
    "argv": ["/opt/e/llama-server", "-m", "/srv/models/g.gguf", "-c", "4096", "--host", "127.0.0.1", "--port",
             "8090", "-ngl", "auto", "--cache-ram", "2048", "--api-key-file", "/run/credentials/x/api_key",
             "-c", "8192"],
    "notes": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
    "facts": {"model": "/srv/models/g.gguf", "model_bytes": 253112320, "gpus": [{"index": 0}, {"index": 1}],
              "vram_mib": 49152, "ram_mib": 24000, "ram_avail_mib": 20000},
    # What llama_server_plan decided (planner.Decisions): read as it is, never re-derived from argv.
    "decisions": {"host": "127.0.0.2", "port": "8090", "loopback_only": True,
                  "health_url": "http://127.0.0.2:8090/health", "health_unix_socket": ""},
}


def test_plan_summary():
    summary = plan_summary(PLAN)
    assert summary == {
        "model": "g.gguf",
        "model_path": "/srv/models/g.gguf",
        "model_bytes": 253112320,
        "ctx": "8192",  # the last -c wins, as in the engine
        "ngl": "auto",
        "cache_ram": "2048",
        "gpus": 2,
        "vram_mib": 49152,
        "ram_mib": 24000,
        "ram_avail_mib": 20000,
        "notes_count": 2,
        "host": "127.0.0.2",
        "port": "8090",
        "loopback_only": True,
        "health_url": "http://127.0.0.2:8090/health",
        "health_unix_socket": "",
    }


def test_plan_summary_defaults_and_equals_form():
    summary = plan_summary({"argv": ["/e/llama-server", "--ctx-size=2048", "--n-gpu-layers", "99"], "facts": None,
                            "decisions": {}})
    assert (summary["ctx"], summary["ngl"], summary["cache_ram"]) == ("2048", "99", "")
    assert (summary["model"], summary["gpus"], summary["notes_count"]) == ("", 0, 0)


@pytest.mark.parametrize("plan", [["argv"], {"argv": ["/b"]}, {"argv": [], "decisions": []}])
def test_plan_summary_refuses_what_is_not_a_plan_result(plan):
    with pytest.raises(AnsibleFilterError, match="with decisions"):
        plan_summary(plan)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param("127.0.0.1", True, id="v4-loopback"),
        pytest.param("127.3.0.9", True, id="v4-loopback-net"),
        pytest.param("::1", True, id="v6-loopback"),
        pytest.param("[::1]", True, id="v6-bracketed"),
        pytest.param("localhost", True, id="localhost"),
        pytest.param("/run/llama/x.sock", True, id="unix-socket"),
        pytest.param("127.0.0.1,::1", True, id="list-all-loopback"),
        pytest.param("0.0.0.0", False, id="any-v4"),
        pytest.param("::", False, id="any-v6"),
        pytest.param("10.0.0.5", False, id="lan"),
        pytest.param("127.0.0.1,10.0.0.5", False, id="list-one-open"),
        pytest.param("myhost", False, id="hostname"),
        pytest.param("", False, id="empty-is-default-any"),
    ],
)
def test_loopback_only(host, expected):
    assert loopback_only(host) is expected


@pytest.mark.parametrize(
    ("host", "url", "socket"),
    [
        pytest.param("0.0.0.0", "http://127.0.0.1:8080/health", "", id="any-v4"),
        pytest.param("::", "http://[::1]:8080/health", "", id="any-v6"),
        pytest.param("10.0.0.5,127.0.0.1", "http://10.0.0.5:8080/health", "", id="first-of-list"),
        pytest.param("fd00::5", "http://[fd00::5]:8080/health", "", id="v6"),
        pytest.param("myhost", "http://myhost:8080/health", "", id="hostname"),
        pytest.param("/run/x.sock", "http://localhost/health", "/run/x.sock", id="unix-socket"),
    ],
)
def test_health_target(host, url, socket):
    assert health_target(host, 8080) == {"url": url, "unix_socket": socket}


def test_registered_names():
    assert set(FilterModule().filters()) == {"instance_files", "instance_preset", "instances_in_state",
                                             "merge_preset", "model_files", "plan_summary"}


def test_instance_files_is_what_state_absent_removes():
    files = FilterModule().filters()["instance_files"]("main", "/etc/l", "/etc/l/cred", "/var/cache/l", "/var/lib/l")
    assert files == ["/etc/systemd/system/llama-server-main.service", "/etc/l/cred/main.key", "/etc/l/cred/main.env",
                     "/etc/l/instance-main.json", "/etc/l/last-good/main", "/var/cache/l/main",
                     "/var/lib/l/instances/main"]


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
