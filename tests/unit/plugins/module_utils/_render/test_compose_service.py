"""compose.py: one planned instance as a compose service (table-driven)."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    SECRET_PATH,
    ComposeError,
    ServiceSpec,
    compose_fragment,
    container_gpu_env,
    escape,
    gpu_reservation,
    health_url,
    service_environment,
)
from tests.unit.support.paths import FIXTURES

REAL_HELP = (FIXTURES / "engine"
             / "llama-server-11434.0.0-cpu.help.txt").read_text()


def planned(preset: dict, **facts) -> planner.Plan:
    """A real plan for the image's engine (the 11434 help captured from it)."""
    base = {"bin": "/app/llama-server", "model": "/srv/models/m.gguf", "help": REAL_HELP}
    return planner.plan(preset, planner.HostFacts(**{**base, **facts}))


PLAN = planned({"HOST": "127.0.0.1", "PORT": "8081", "CTX": "4096"})
ARGV, DECISIONS = PLAN.argv, PLAN.decisions
KEYED_PLAN = planned({"HOST": "127.0.0.1", "PORT": "8081", "CTX": "4096"}, api_key_file=SECRET_PATH)
KEYED_ARGV, KEYED_DECISIONS = KEYED_PLAN.argv, KEYED_PLAN.decisions
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


@pytest.mark.parametrize(
    "selection",
    ["0,0", "1,01", "a", "0;1", "1,,2", "0,1 2", "GPU-", "$(id)", "1234", "0,all",
     "0,GPU-5e5c0a6c-1a2b-3c4d-5e6f-0123456789ab"],  # the last: indices and UUIDs mixed
)
def test_gpu_reservation_refuses_what_docker_cannot_reserve(selection):
    with pytest.raises(ComposeError, match="CUDA_VISIBLE_DEVICES"):
        gpu_reservation(True, selection)


UUID_A = "GPU-5e5c0a6c-1a2b-3c4d-5e6f-0123456789ab"
UUID_B = "GPU-0badc0de-1a2b-3c4d-5e6f-0123456789ab"


# The host's CUDA_VISIBLE_DEVICES against what the container must be given: inside, only the reserved cards
# exist, renumbered from 0 in bus order; None = the variable is not set.
@pytest.mark.parametrize(
    ("gpus", "selection", "expected"),
    [
        (False, "2,3", {}),  # no reservation: the environment is the plan's
        (True, "", {}),  # count: all, every card as on the host
        (True, "-1", {}),  # no card reserved; -1 still hides them all
        (True, "0", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": None}),
        (True, "3", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": None}),  # host 3 is CUDA0 inside
        (True, "2,3", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": None}),
        (True, "1,3,7", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": None}),
        # Not ascending: the plan made host card 3 CUDA0; inside it is the second card on the bus.
        (True, "3,2", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1,0"}),
        (True, "5,1,3", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "2,0,1"}),
        (True, "10,9", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1,0"}),  # numbers, not text
        # A UUID names the same card inside the container: kept, order and all.
        (True, UUID_A, {"CUDA_VISIBLE_DEVICES": UUID_A}),
        (True, f"{UUID_B},{UUID_A}", {"CUDA_VISIBLE_DEVICES": f"{UUID_B},{UUID_A}"}),
    ],
)
def test_container_gpu_env(gpus, selection, expected):
    assert container_gpu_env(gpu_reservation(gpus, selection)) == expected


PCI = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


@pytest.mark.parametrize(
    ("user_env", "plan_env", "container_env"),
    [
        # The preset's selection: the plan sets PCI_BUS_ID with it.
        ({}, {"CUDA_VISIBLE_DEVICES": "2,3", **PCI}, PCI),
        ({}, {"CUDA_VISIBLE_DEVICES": "3,2", **PCI}, {**PCI, "CUDA_VISIBLE_DEVICES": "1,0"}),
        ({}, {"CUDA_VISIBLE_DEVICES": UUID_A, **PCI}, {**PCI, "CUDA_VISIBLE_DEVICES": UUID_A}),
        # The service environment's selection: device_ids are nvidia-smi indices (bus order), so the
        # container counts in bus order whatever order the user asked CUDA for.
        ({"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}, {},
         {**PCI, "CUDA_VISIBLE_DEVICES": "1,0"}),
        ({"CUDA_VISIBLE_DEVICES": "6", "TZ": "UTC"}, {}, {**PCI, "TZ": "UTC"}),
        # UUIDs do not depend on any order: the user's CUDA_DEVICE_ORDER stays.
        ({"CUDA_VISIBLE_DEVICES": UUID_A, "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}, {},
         {"CUDA_VISIBLE_DEVICES": UUID_A, "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}),
    ],
)
def test_the_container_gets_its_own_numbering(user_env, plan_env, container_env):
    selection = {**user_env, **plan_env}["CUDA_VISIBLE_DEVICES"]
    spec = dataclasses.replace(SPEC, environment=user_env)
    assert service_environment(spec, plan_env, gpu_reservation(True, selection)) == container_env


def test_a_selection_from_the_users_environment_is_renumbered_too():
    # Without the preset key the selection is the service environment's, without PCI_BUS_ID from the plan.
    spec = dataclasses.replace(SPEC, environment={"CUDA_VISIBLE_DEVICES": "4,2"}, gpus=True, gpu_selection="4,2")
    service = compose_fragment(ARGV, {}, DECISIONS, spec)["services"]["chat"]
    assert service["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] == ["4", "2"]
    assert service["environment"]["CUDA_VISIBLE_DEVICES"] == "1,0"
    assert service["environment"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


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
    assert health_url(planned({"HOST": host, "PORT": port}).decisions) == url


def test_health_url_is_the_plans_even_when_extra_args_set_the_port():
    decisions = planned({"HOST": "0.0.0.0", "PORT": "1", "EXTRA_ARGS": "--port 2"}).decisions
    assert health_url(decisions) == "http://127.0.0.1:2/health"


def test_health_url_defaults_are_lokis():
    assert health_url(planned({}).decisions) == "http://127.0.0.1:8080/health"


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        (planned({"HOST": "/run/llama/x.sock"}).decisions, "unix socket"),
        (planner.Decisions(), "no health URL"),
    ],
)
def test_health_url_refuses(decisions, message):
    with pytest.raises(ComposeError, match=message):
        health_url(decisions)


# ---------------------------------------------------------------------------
# The whole service
# ---------------------------------------------------------------------------

def test_service_runs_the_plan_without_the_binary():
    service = compose_fragment(ARGV, {}, DECISIONS, SPEC)["services"]["chat"]
    assert service["command"] == ARGV[1:]
    assert service["image"] == "llamafleet/llama-server:cpu"
    assert service["container_name"] == "llama-server-chat"
    assert service["network_mode"] == "host"
    assert service["restart"] == "unless-stopped"
    assert service["user"] == "995:995"


def test_service_is_hardened():
    service = compose_fragment(ARGV, {}, DECISIONS, SPEC)["services"]["chat"]
    assert service["read_only"] is True
    assert service["cap_drop"] == ["ALL"]
    assert service["security_opt"] == ["no-new-privileges:true"]
    assert service["stop_signal"] == "SIGINT"


def test_no_llama_cpp_config_ini_reaches_the_container():
    service = compose_fragment(ARGV, {"LLAMA_ARG_X": "1"}, DECISIONS, SPEC)["services"]["chat"]
    # An empty /etc/llama.cpp over the image's, and XDG_CONFIG_HOME on the empty tmpfs /tmp.
    assert service["tmpfs"] == ["/etc/llama.cpp:ro,size=4k", "/tmp"]
    assert service["environment"]["XDG_CONFIG_HOME"] == "/tmp/llamafleet-no-config"
    user_set = compose_fragment(ARGV, {}, DECISIONS, dataclasses.replace(SPEC, environment={"XDG_CONFIG_HOME": "/h"}))
    assert user_set["services"]["chat"]["environment"]["XDG_CONFIG_HOME"] == "/tmp/llamafleet-no-config"


def test_models_read_only_at_the_same_path_and_slots_writable():
    spec = dataclasses.replace(SPEC, model_dirs=("/srv/models", "/data/gguf", "/srv/models"), slot_dir="/var/s")
    volumes = compose_fragment(ARGV, {}, DECISIONS, spec)["services"]["chat"]["volumes"]
    assert [(v["source"], v["target"], v.get("read_only", False)) for v in volumes] == [
        ("/srv/models", "/srv/models", True),
        ("/data/gguf", "/data/gguf", True),
        ("/var/s", "/var/s", False),
    ]
    assert all(v["bind"] == {"create_host_path": False} for v in volumes)


def test_healthcheck_on_the_real_port_with_the_start_period():
    spec = dataclasses.replace(SPEC, start_period_s=95)
    check = compose_fragment(ARGV, {}, DECISIONS, spec)["services"]["chat"]["healthcheck"]
    assert check["test"][0] == "CMD"
    assert check["test"][-1] == "http://127.0.0.1:8081/health"
    assert check["start_period"] == "95s"


@pytest.mark.parametrize(
    ("gpus", "selection", "key", "container_cvd"),
    [
        (True, "", "count", None),
        (True, "0,1", "device_ids", None),
        (True, "1,0", "device_ids", "1,0"),
        (True, UUID_A, "device_ids", UUID_A),
        (True, "-1", None, "-1"),  # the plan hides every card: nothing to reserve
        (False, "0", None, "0"),  # llama_server_nvidia off (or a CPU-only host): the plan's env as it is
    ],
)
def test_service_gpu_reservation(gpus, selection, key, container_cvd):
    spec = dataclasses.replace(SPEC, gpus=gpus, gpu_selection=selection)
    service = compose_fragment(ARGV, {"CUDA_VISIBLE_DEVICES": selection} if selection else {}, DECISIONS, spec)
    service = service["services"]["chat"]
    assert service.get("environment", {}).get("CUDA_VISIBLE_DEVICES") == container_cvd
    if key is None:
        assert "deploy" not in service
        return
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert len(devices) == 1
    assert key in devices[0]
    assert ({"count", "device_ids"} - {key}).isdisjoint(devices[0])
    assert (devices[0]["driver"], devices[0]["capabilities"]) == ("nvidia", ["gpu"])


def test_a_cpu_only_service_has_no_deploy_section():
    # What every compose file had before GPUs were reserved: an unchanged file keeps its container.
    assert "deploy" not in compose_fragment(ARGV, {}, DECISIONS, SPEC)["services"]["chat"]


def test_key_is_a_secret_file_never_a_value():
    spec = dataclasses.replace(SPEC, key_file="/etc/llamafleet/credentials/chat.key")
    fragment = compose_fragment(KEYED_ARGV, {}, KEYED_DECISIONS, spec)
    assert fragment["secrets"] == {"llama-server-chat-api-key": {"file": "/etc/llamafleet/credentials/chat.key"}}
    assert fragment["services"]["chat"]["secrets"] == [
        {"source": "llama-server-chat-api-key", "target": "llama-api-key"}
    ]
    assert fragment["services"]["chat"]["command"][-2:] == ["--api-key-file", SECRET_PATH]


def test_no_key_no_secret():
    fragment = compose_fragment(ARGV, {}, DECISIONS, SPEC)
    assert "secrets" not in fragment
    assert "secrets" not in fragment["services"]["chat"]


def test_a_key_the_engine_cannot_read_from_the_secret_is_refused():
    spec = dataclasses.replace(SPEC, key_file="/etc/llamafleet/credentials/chat.key")
    with pytest.raises(ComposeError, match="--api-key-file"):
        compose_fragment(ARGV, {}, DECISIONS, spec)


@pytest.mark.parametrize(
    ("text", "escaped"),
    [("a", "a"), ("$HOME", "$$HOME"), ("${X:-y}", "$${X:-y}"), ("$$", "$$$$"), ("", "")],
)
def test_escape(text, escaped):
    assert escape(text) == escaped


def test_every_dollar_reaches_the_engine_literally():
    argv = [*ARGV, "--chat-template", "{{ $x }}", "--alias", "$USER"]
    spec = dataclasses.replace(SPEC, environment={"NOTE": "costs $5"}, image="reg/$img:1")
    service = compose_fragment(argv, {}, DECISIONS, spec)["services"]["chat"]
    assert service["command"][-3:] == ["{{ $$x }}", "--alias", "$$USER"]
    assert service["environment"] == {"NOTE": "costs $$5", "XDG_CONFIG_HOME": "/tmp/llamafleet-no-config"}
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
        compose_fragment(argv, {}, DECISIONS, dataclasses.replace(SPEC, **change))


@pytest.mark.parametrize(("nofile", "ulimits"), [(0, None), (65536, {"nofile": {"soft": 65536, "hard": 65536}})])
def test_open_files_limit_only_when_asked(nofile, ulimits):
    service = compose_fragment(ARGV, {}, DECISIONS, dataclasses.replace(SPEC, nofile=nofile))["services"]["chat"]
    assert service.get("ulimits") == ulimits
