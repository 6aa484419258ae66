"""compose.py: one planned instance as a compose service (table-driven)."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils.compose import (
    SECRET_PATH,
    ComposeError,
    ServiceSpec,
    compose_fragment,
    escape,
    gpu_reservation,
    health_url,
    service_environment,
)

ARGV = ["/app/llama-server", "-m", "/srv/models/m.gguf", "--host", "127.0.0.1", "--port", "8081", "-c", "4096"]
KEYED_ARGV = [*ARGV, "--api-key-file", SECRET_PATH]
SPEC = ServiceSpec(name="chat", image="llamafleet/llama-server:cpu", user="995:995", model_dirs=("/srv/models",))


# ---------------------------------------------------------------------------
# GPU reservations: device_ids for a selection, else count; never both
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("gpus", "selection", "expected"),
    [
        (False, "", []),
        (False, "0,1", []),
        (True, "", [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]),
        (True, "  ", [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]),
        (True, "1", [{"driver": "nvidia", "device_ids": ["1"], "capabilities": ["gpu"]}]),
        (True, "0, 2", [{"driver": "nvidia", "device_ids": ["0", "2"], "capabilities": ["gpu"]}]),
        (True, "GPU-5e5c0a6c-1a2b-3c4d-5e6f-0123456789ab",
         [{"driver": "nvidia", "device_ids": ["GPU-5e5c0a6c-1a2b-3c4d-5e6f-0123456789ab"], "capabilities": ["gpu"]}]),
        (True, "MIG-4f8c1a9e-1111-2222-3333-444455556666",
         [{"driver": "nvidia", "device_ids": ["MIG-4f8c1a9e-1111-2222-3333-444455556666"], "capabilities": ["gpu"]}]),
        (True, "-1", []),
    ],
)
def test_gpu_reservation(gpus, selection, expected):
    assert gpu_reservation(gpus, selection) == expected


@pytest.mark.parametrize("selection", ["", "0", "0,1", "3,1,2", "GPU-aaaaaaaa-bbbb", "-1"])
def test_count_and_device_ids_are_mutually_exclusive(selection):
    for device in gpu_reservation(True, selection):
        assert ("count" in device) != ("device_ids" in device)
        assert device["capabilities"] == ["gpu"]


@pytest.mark.parametrize("selection", ["0,0", "a", "0;1", "1,,2", "0,1 2", "GPU-", "$(id)", "1234", "0,all"])
def test_gpu_reservation_refuses_what_docker_cannot_reserve(selection):
    with pytest.raises(ComposeError, match="CUDA_VISIBLE_DEVICES"):
        gpu_reservation(True, selection)


def test_named_gpus_drop_the_hosts_numbering_inside_the_container():
    reservation = gpu_reservation(True, "2,3")
    plan_env = {"CUDA_VISIBLE_DEVICES": "2,3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    env = service_environment(SPEC, plan_env, reservation)
    assert "CUDA_VISIBLE_DEVICES" not in env
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_count_keeps_the_selection_variables():
    env = service_environment(SPEC, {"CUDA_SCALE_LAUNCH_QUEUES": "4x"}, gpu_reservation(True, ""))
    assert env == {"CUDA_SCALE_LAUNCH_QUEUES": "4x"}


def test_plan_environment_wins_over_the_users():
    spec = dataclasses.replace(SPEC, environment={"GGML_CUDA_GRAPH_OPT": "0", "TZ": "UTC"})
    env = service_environment(spec, {"GGML_CUDA_GRAPH_OPT": "1"}, [])
    assert env == {"GGML_CUDA_GRAPH_OPT": "1", "TZ": "UTC"}


# ---------------------------------------------------------------------------
# Health URL from the planned host and port
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", "8081", "http://127.0.0.1:8081/health"),
        ("0.0.0.0", "8080", "http://127.0.0.1:8080/health"),
        ("::", "9000", "http://[::1]:9000/health"),
        ("::1", "9000", "http://[::1]:9000/health"),
        ("10.1.2.3", "80", "http://10.1.2.3:80/health"),
        ("[fe80::1]", "81", "http://[fe80::1]:81/health"),
        ("gpu-box.lan", "8080", "http://gpu-box.lan:8080/health"),
        ("127.0.0.1,10.0.0.5", "8081", "http://127.0.0.1:8081/health"),  # several addresses: the first
    ],
)
def test_health_url(host, port, url):
    assert health_url(["/app/llama-server", "--host", host, "--port", port]) == url


def test_health_url_takes_the_last_value_like_the_engine():
    argv = ["/b", "--host", "0.0.0.0", "--port", "1", "--port", "2"]
    assert health_url(argv) == "http://127.0.0.1:2/health"


def test_health_url_defaults_are_lokis():
    assert health_url(["/b"]) == "http://127.0.0.1:8080/health"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["/b", "--host", "/run/llama/x.sock"], "unix socket"),
        (["/b", "--port", "80a"], "PORT"),
    ],
)
def test_health_url_refuses(argv, message):
    with pytest.raises(ComposeError, match=message):
        health_url(argv)


# ---------------------------------------------------------------------------
# The whole service
# ---------------------------------------------------------------------------

def test_service_runs_the_plan_without_the_binary():
    service = compose_fragment(ARGV, {}, SPEC)["services"]["chat"]
    assert service["command"] == ARGV[1:]
    assert service["image"] == "llamafleet/llama-server:cpu"
    assert service["container_name"] == "llama-server-chat"
    assert service["network_mode"] == "host"
    assert service["restart"] == "unless-stopped"
    assert service["user"] == "995:995"


def test_service_is_hardened():
    service = compose_fragment(ARGV, {}, SPEC)["services"]["chat"]
    assert service["read_only"] is True
    assert service["cap_drop"] == ["ALL"]
    assert service["security_opt"] == ["no-new-privileges:true"]
    assert service["tmpfs"] == ["/tmp"]
    assert service["stop_signal"] == "SIGINT"


def test_models_read_only_at_the_same_path_and_slots_writable():
    spec = dataclasses.replace(SPEC, model_dirs=("/srv/models", "/data/gguf", "/srv/models"), slot_dir="/var/s")
    volumes = compose_fragment(ARGV, {}, spec)["services"]["chat"]["volumes"]
    assert [(v["source"], v["target"], v.get("read_only", False)) for v in volumes] == [
        ("/srv/models", "/srv/models", True),
        ("/data/gguf", "/data/gguf", True),
        ("/var/s", "/var/s", False),
    ]
    assert all(v["bind"] == {"create_host_path": False} for v in volumes)


def test_healthcheck_on_the_real_port_with_the_start_period():
    spec = dataclasses.replace(SPEC, start_period_s=95)
    check = compose_fragment(ARGV, {}, spec)["services"]["chat"]["healthcheck"]
    assert check["test"][0] == "CMD"
    assert check["test"][-1] == "http://127.0.0.1:8081/health"
    assert check["start_period"] == "95s"


@pytest.mark.parametrize(
    ("gpus", "selection", "key"),
    [(True, "", "count"), (True, "0,1", "device_ids"), (False, "0", None)],
)
def test_service_gpu_reservation(gpus, selection, key):
    spec = dataclasses.replace(SPEC, gpus=gpus, gpu_selection=selection)
    service = compose_fragment(ARGV, {"CUDA_VISIBLE_DEVICES": selection} if selection else {}, spec)
    service = service["services"]["chat"]
    if key is None:
        assert "deploy" not in service
        return
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert len(devices) == 1
    assert key in devices[0]
    assert ({"count", "device_ids"} - {key}).isdisjoint(devices[0])
    assert ("CUDA_VISIBLE_DEVICES" in service.get("environment", {})) == (key == "count" and bool(selection))


def test_key_is_a_secret_file_never_a_value():
    spec = dataclasses.replace(SPEC, key_file="/etc/llamafleet/credentials/chat.key")
    fragment = compose_fragment(KEYED_ARGV, {}, spec)
    assert fragment["secrets"] == {"llama-server-chat-api-key": {"file": "/etc/llamafleet/credentials/chat.key"}}
    assert fragment["services"]["chat"]["secrets"] == [
        {"source": "llama-server-chat-api-key", "target": "llama-api-key"}
    ]
    assert fragment["services"]["chat"]["command"][-2:] == ["--api-key-file", SECRET_PATH]


def test_no_key_no_secret():
    fragment = compose_fragment(ARGV, {}, SPEC)
    assert "secrets" not in fragment
    assert "secrets" not in fragment["services"]["chat"]


def test_a_key_the_engine_cannot_read_from_the_secret_is_refused():
    spec = dataclasses.replace(SPEC, key_file="/etc/llamafleet/credentials/chat.key")
    with pytest.raises(ComposeError, match="--api-key-file"):
        compose_fragment(ARGV, {}, spec)


@pytest.mark.parametrize(
    ("text", "escaped"),
    [("a", "a"), ("$HOME", "$$HOME"), ("${X:-y}", "$${X:-y}"), ("$$", "$$$$"), ("", "")],
)
def test_escape(text, escaped):
    assert escape(text) == escaped


def test_every_dollar_reaches_the_engine_literally():
    argv = [*ARGV, "--chat-template", "{{ $x }}", "--alias", "$USER"]
    spec = dataclasses.replace(SPEC, environment={"NOTE": "costs $5"}, image="reg/$img:1")
    service = compose_fragment(argv, {}, spec)["services"]["chat"]
    assert service["command"][-3:] == ["{{ $$x }}", "--alias", "$$USER"]
    assert service["environment"] == {"NOTE": "costs $$5"}
    assert service["image"] == "reg/$$img:1"


@pytest.mark.parametrize(
    ("change", "argv", "message"),
    [
        ({"name": "bad name"}, ARGV, "instance name"),
        ({"name": "-x"}, ARGV, "instance name"),
        ({"image": ""}, ARGV, "llama_server_image"),
        ({"image": "a b"}, ARGV, "llama_server_image"),
        ({"user": "llamafleet"}, ARGV, "uid:gid"),
        ({"model_dirs": ("models",)}, ARGV, "absolute"),
        ({"slot_dir": "slots"}, ARGV, "absolute"),
        ({"environment": {"A-B": "1"}}, ARGV, "environment variable name"),
        ({"health_command": ()}, ARGV, "health_command"),
        ({}, ["/app/llama-server"], "no command line"),
        ({}, [], "no command line"),
    ],
)
def test_refusals_name_the_setting(change, argv, message):
    with pytest.raises(ComposeError, match=message):
        compose_fragment(argv, {}, dataclasses.replace(SPEC, **change))


@pytest.mark.parametrize(("nofile", "ulimits"), [(0, None), (65536, {"nofile": {"soft": 65536, "hard": 65536}})])
def test_open_files_limit_only_when_asked(nofile, ulimits):
    service = compose_fragment(ARGV, {}, dataclasses.replace(SPEC, nofile=nofile))["services"]["chat"]
    assert service.get("ulimits") == ulimits
