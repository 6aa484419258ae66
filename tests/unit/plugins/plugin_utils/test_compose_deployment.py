"""The compose runtime's controller side: the compose file's text, and the flow of one instance through
llama_server_compose and docker_compose_v2 (stood in for by recorded answers; the molecule scenario compose
runs both against a real Docker engine)."""

import json
from unittest import mock

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import ServiceSpec
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import compose_deployment
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.compose_deployment import ComposeDeployment
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.compose_file import compose_file_text

KEY = "k-compose-secret"
PLAN = {
    "argv": ["/app/llama-server", "-m", "/m/x.gguf", "-c", "4096", "--host", "127.0.0.1", "--port", "8090",
             "--api-key-file", "/run/secrets/llama-api-key"],
    "env": {},
    "notes": [{"id": "ctx.preset", "text": "CTX   4096\nfrom the preset"}],
    "plan_warnings": [{"id": "w.1", "text": "a warning"}],
    "decisions": {"host": "127.0.0.1", "port": "8090", "health_url": "http://127.0.0.1:8090/health",
                  "health_unix_socket": "", "api_key_file": "/run/secrets/llama-api-key", "slot_dir": "",
                  "slot_persist": False, "loopback_only": True, "expect": {"ctx": 4096, "slots": 1}},
    "facts": {"model": "/m/x.gguf", "model_bytes": 1 << 30, "ram_avail_mib": 1000, "gpus": []},
    "external": False,
}
ARGS = {
    "python": "/opt/venv/bin/python", "home": "/var/lib/l", "models_dir": "/m", "model_dirs": [],
    "config_dir": "/etc/l", "credentials_dir": "/etc/l/cred", "plan_cache_dir": "/var/cache/l", "user": "svc",
    "group": "svc", "environment": {}, "engine": "", "engine_official": False, "allow_open": False,
    "nvidia": "auto", "protect_home": "yes", "restart_sec": 5, "stop_timeout_s": 30, "limit_nofile": 65536,
    "health_timeout_base_s": 60, "health_timeout_per_gib_s": 20, "health_listen_timeout_s": 30,
    "health_delay_s": 2.0, "journal_lines": 40,
    "compose": {"image": "img:1", "image_id": "sha256:1", "project": "llamafleet", "dir": "/etc/l/compose",
                "docker_cli": "docker", "docker_host": "", "docker_env": {"DOCKER_CONFIG": "/opt/d"}, "uid": 7,
                "gid": 8, "health_command": ["curl", "-f"], "log_lines": 5, "nofile": 0},
}


def test_the_compose_file_holds_the_notes_then_the_service():
    spec = ServiceSpec(name="main", image="img:1", user="7:8", model_dirs=("/m",), key_file="/etc/l/cred/main.key")
    text = compose_file_text("main", PLAN, spec, "llamafleet")
    lines = text.splitlines()
    assert lines[:5] == ["# Ansible managed", "# llamafleet.llamacpp.llama_server: instance main of compose project "
                         "llamafleet", "# The command below was planned by llamafleet.llamacpp.llama_server_plan; "
                         "why:", "# [ctx.preset] CTX 4096 from the preset", "# warning [w.1] a warning"]
    service = yaml.safe_load(text)["services"]["main"]
    assert service["command"] == PLAN["argv"][1:]
    assert service["user"] == "7:8"


class Recorder:
    """The modules' answers, in call order per module name; every call is kept."""

    def __init__(self, answers):
        self.answers = {name: list(values) for name, values in answers.items()}
        self.calls = []

    def __call__(self, module, module_args, task_vars, python):
        self.calls.append((module, json.loads(json.dumps(module_args)), python))
        return json.loads(json.dumps(self.answers[module].pop(0)))

    def of(self, module):
        return [args for name, args, _python in self.calls if name == module]


def written_env(recorder):
    return recorder.of("llamafleet.llamacpp.llama_server_compose")[0]["docker_env"]


def deploy(answers, check_mode=False, have_compose_v2=True, args=None):
    action = mock.MagicMock()
    action._task.check_mode = check_mode
    action._task.environment = None
    recorder = Recorder(answers)
    action._module.side_effect = recorder
    action._not_deployable.return_value = None
    deployment = ComposeDeployment(action, "main", {"name": "main"}, {"MODEL": "x.gguf"}, key=KEY,
                                   args=args or ARGS, task_vars={})
    deployment._have_compose_v2 = lambda: have_compose_v2
    return deployment.run(), recorder


PLANNED = {"llamafleet.llamacpp.llama_server_plan": [PLAN]}
WRITTEN = {"changed_files": ["the compose file"], "key_changed": False, "new": False,
           "project_files": ["main.yaml", "side.yaml"]}
VERIFIED = {"health": 200, "props": {"n_ctx": 4096, "total_slots": 1}, "runs_plan": True}


def test_a_change_is_written_brought_up_with_compose_and_verified():
    result, recorder = deploy({**PLANNED, "llamafleet.llamacpp.llama_server_compose": [WRITTEN, VERIFIED],
                               "community.docker.docker_compose_v2": [{"changed": True}]})
    assert result["report"]["state"] == "deployed"
    assert (result["report"]["restarted"], result["report"]["ctx"]) == (True, "4096")
    plan_args = recorder.of("llamafleet.llamacpp.llama_server_plan")[0]
    assert (plan_args["engine_image"], plan_args["container"], plan_args["unit"]) == ("img:1", "llama-server-main", "")
    assert plan_args["api_key_file"] == "/run/secrets/llama-api-key"
    [up] = recorder.of("community.docker.docker_compose_v2")
    assert written_env(recorder) == {"DOCKER_CONFIG": "/opt/d"}
    assert (up["files"], up["services"], up["recreate"], up["wait"]) == (["main.yaml", "side.yaml"], ["main"],
                                                                         "auto", True)
    written, verified = recorder.of("llamafleet.llamacpp.llama_server_compose")
    assert (written["state"], verified["state"]) == ("written", "verified")
    assert written["command"] == PLAN["argv"][1:]
    assert written["key_content"] == KEY + "\n"
    assert KEY not in json.dumps(result)


def test_a_changed_key_recreates_the_container():
    _result, recorder = deploy({**PLANNED, "llamafleet.llamacpp.llama_server_compose": [
        {**WRITTEN, "key_changed": True}, VERIFIED], "community.docker.docker_compose_v2": [{"changed": True}]})
    assert recorder.of("community.docker.docker_compose_v2")[0]["recreate"] == "always"


def test_a_failed_verification_goes_back_to_the_verified_files():
    result, recorder = deploy({**PLANNED, "llamafleet.llamacpp.llama_server_compose": [
        WRITTEN, {"failed": True, "msg": "/props: n_ctx is 2048, the plan's is 4096"},
        {"engine_says": ["loaded", "oops"]}, {"outcome": "restored", "project_files": ["main.yaml"]}],
        "community.docker.docker_compose_v2": [{"changed": True}, {"changed": True}]})
    assert result["failed"] is True
    assert "n_ctx is 2048" in result["msg"]
    assert "rolled back to the previous compose file" in result["msg"]
    assert "docker logs llama-server-main (last 2 lines):\nloaded\noops" in result["msg"]
    assert result["report"]["rolled_back"] is True
    assert recorder.of("community.docker.docker_compose_v2")[1]["recreate"] == "always"
    # The log is read before the failed container is replaced.
    assert [a["state"] for a in recorder.of("llamafleet.llamacpp.llama_server_compose")] == [
        "written", "verified", "failed", "restored"]


def test_a_new_instance_that_fails_is_taken_down_and_removed():
    result, recorder = deploy({**PLANNED, "llamafleet.llamacpp.llama_server_compose": [
        {**WRITTEN, "new": True}, {"engine_says": []}, {"outcome": "removed", "project_files": []}],
        "community.docker.docker_compose_v2": [{"failed": True, "msg": "container unhealthy"}, {"changed": True}]})
    assert "docker compose up: container unhealthy — the new instance was removed" in result["msg"]
    assert recorder.of("community.docker.docker_compose_v2")[1]["state"] == "absent"


def test_check_mode_previews_a_change_without_compose_and_shows_the_diff():
    diff = {"before": "a", "after": "b", "before_header": "/etc/l/compose/main.yaml"}
    result, recorder = deploy({**PLANNED, "llamafleet.llamacpp.llama_server_compose": [{**WRITTEN, "diff": diff}]},
                              check_mode=True)
    assert (result["report"]["state"], result["report"]["would_restart"]) == ("previewed", True)
    assert result["diff"] == diff
    assert recorder.of("community.docker.docker_compose_v2") == []


def test_without_community_docker_the_message_says_what_to_install():
    result, recorder = deploy({}, have_compose_v2=False)
    assert result["failed"] is True
    assert result["msg"] == compose_deployment.NO_COMMUNITY_DOCKER
    assert recorder.calls == []


def test_a_bare_return_code_is_told_with_compose_own_words():
    assert compose_deployment.compose_failure({"msg": "Return code 1 is non-zero",
                                               "stderr": "x\ncontainer llama-server-main exited (1)\n"}) == (
        "container llama-server-main exited (1) (Return code 1 is non-zero)")
    assert compose_deployment.compose_failure({"msg": "Error when processing container x: unhealthy"}) == (
        "Error when processing container x: unhealthy")


GPU = {"index": 0, "uuid": "GPU-5e5c0a6c-1a2b-3c4d-5e6f-0123456789ab", "name": "H100", "memory_total_mib": 81559}


# llama_server_nvidia decides the reservation as it decides the unit's device rules; the plan's selection
# (its env) decides which cards.
@pytest.mark.parametrize(
    ("nvidia", "gpus", "plan_env", "devices", "container_cvd"),
    [
        ("auto", [], {}, None, None),  # a CPU-only host: no deploy section, as before
        ("auto", [GPU], {}, [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}], None),
        ("auto", [GPU, {**GPU, "index": 1}], {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
         [{"driver": "nvidia", "device_ids": ["1"], "capabilities": ["gpu"]}], None),
        ("auto", [GPU, {**GPU, "index": 1}], {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
         [{"driver": "nvidia", "device_ids": ["1", "0"], "capabilities": ["gpu"]}], "1,0"),
        ("no", [GPU], {}, None, None),
        ("false", [GPU], {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, None, "0"),
        ("yes", [], {}, [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}], None),
    ],
)
def test_gpus_are_reserved_as_the_unit_would_get_them(nvidia, gpus, plan_env, devices, container_cvd):
    plan = {**PLAN, "env": plan_env, "facts": {**PLAN["facts"], "gpus": gpus}}
    _result, recorder = deploy({"llamafleet.llamacpp.llama_server_plan": [plan],
                                "llamafleet.llamacpp.llama_server_compose": [WRITTEN, VERIFIED],
                                "community.docker.docker_compose_v2": [{"changed": True}]},
                               args={**ARGS, "nvidia": nvidia})
    service = yaml.safe_load(recorder.of("llamafleet.llamacpp.llama_server_compose")[0]["compose_content"])
    service = service["services"]["main"]
    reserved = service.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices")
    assert reserved == devices
    assert service["environment"].get("CUDA_VISIBLE_DEVICES") == container_cvd
