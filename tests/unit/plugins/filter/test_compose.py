"""The compose_service filter, and the role's constants that must agree with compose.py."""

import pathlib

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.filter.compose import FilterModule, compose_service
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    DEFAULT_HEALTH_COMMAND,
)

ROLE = pathlib.Path(__file__).resolve().parents[4] / "roles" / "llama_server"
# The parts of a llama_server_plan result the filter reads.
PLAN = {
    "argv": ["/app/llama-server", "-m", "/m/x.gguf", "--host", "127.0.0.1", "--port", "8090"],
    "env": {},
    "decisions": {"host": "127.0.0.1", "port": "8090", "health_url": "http://127.0.0.1:8090/health",
                  "health_unix_socket": "", "api_key_file": "", "slot_dir": ""},
}


def test_registered():
    assert FilterModule().filters()["compose_service"] is compose_service


def test_filter_builds_the_service_with_defaults():
    fragment = compose_service(PLAN, name="a", image="img:1", user="1:2", model_dirs=["/m"], environment={"X": None})
    service = fragment["services"]["a"]
    assert service["command"] == PLAN["argv"][1:]
    assert service["environment"] == {"X": "", "XDG_CONFIG_HOME": "/tmp/llamafleet-no-config"}
    assert service["healthcheck"]["test"] == ["CMD", *DEFAULT_HEALTH_COMMAND, "http://127.0.0.1:8090/health"]


@pytest.mark.parametrize("plan", [None, [], {"env": {}}, {"argv": "llama-server -m x"},
                                  {"argv": ["/b", "-m", "x"]}, {"argv": ["/b"], "decisions": []}])
def test_filter_refuses_what_is_not_a_plan(plan):
    with pytest.raises(AnsibleFilterError, match="llama_server_plan result"):
        compose_service(plan, name="a", image="i", user="1:1")


def test_filter_reports_compose_errors_with_its_name():
    with pytest.raises(AnsibleFilterError, match=r"^compose_service: .*CUDA_VISIBLE_DEVICES"):
        compose_service(PLAN, name="a", image="i", user="1:1", gpus=True, gpu_selection="0,0")


def test_role_default_health_command_is_the_filters():
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert tuple(defaults["llama_server_compose_health_command"]) == DEFAULT_HEALTH_COMMAND
