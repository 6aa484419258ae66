"""A host's variables as the controller's plugins read them: one home for each variable's name and default."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.lookup.role_settings import LookupModule
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from tests.unit.support.host_vars import host_variables

try:
    from ansible.template import trust_as_template as trusted
except ImportError:  # before ansible-core 2.19 every string is a template
    def trusted(value):
        return value

PRESETS = {"small": {"model": "a.gguf"}}


def test_the_margins_as_given_or_the_defaults():
    assert role_vars.host_margins({}) == {"ram_margin_mib": 1024, "gpu_margin_mib": 1024}
    assert role_vars.host_margins({"llama_fleet_ram_margin_mib": None, "llama_fleet_gpu_margin_mib": 0}) == {
        "ram_margin_mib": 1024, "gpu_margin_mib": 0}
    # Not converted: place() reads them and names one it cannot read.
    assert role_vars.host_margins({"llama_fleet_ram_margin_mib": "lots"})["ram_margin_mib"] == "lots"


def test_a_hosts_fields_of_the_placement():
    assert role_vars.host_fields({}) == {"labels": {}, "ram_margin_mib": 1024, "gpu_margin_mib": 1024}
    assert role_vars.host_fields({"llama_fleet_labels": ["zone=a"], "llama_fleet_port_range": [9000, 9009],
                                  "llama_fleet_gpu_margin_mib": 512}) == {
        "labels": ["zone=a"], "ram_margin_mib": 1024, "gpu_margin_mib": 512, "port_range": [9000, 9009]}


def test_a_hosts_instances_hand_placed_first_then_its_replicas():
    variables = {"llama_server_instances": [{"name": "main", "preset": "small"},
                                            {"name": "gone", "state": "absent"},
                                            {"name": "odd", "preset": "nope"}],
                 "llama_server_placed_instances": [{"name": "tiny-0", "preset": "small", "api_key": "k-key-0001"}],
                 "llama_server_presets": PRESETS}
    assert [i["name"] for i in role_vars.host_instances(variables)] == ["main", "gone", "odd", "tiny-0"]
    # The absent one, and one that cannot be layered (its judge refuses it), are not present.
    assert [(i["name"], preset, key) for i, preset, key in role_vars.present_instances(variables)] == [
        ("main", {"MODEL": "a.gguf"}, ""), ("tiny-0", {"MODEL": "a.gguf"}, "k-key-0001")]
    # The gateway's read of the keys alone: the same instances, the same keys.
    assert role_vars.instance_keys(variables) == {"main": "", "tiny-0": "k-key-0001"}
    assert role_vars.host_instances({"llama_server_instances": None}) == []
    assert role_vars.presets({}) == {}


# ---------------------------------------------------------------- the host judge's options from the role's variables
ROLE = Path(__file__).resolve().parents[4] / "roles" / "llama_server"
HOST_VARS = """
ansible_host: 10.0.0.7
vault_key: k-secret-key-77
llama_fleet_lock_lease_s: 600
llama_server_home: /srv/llm
llama_server_presets: {small: {model: small.gguf, ctx: 2048, extra_args: "--alias small"}}
llama_server_instances:
  - {name: main, preset: small, host: "{{ ansible_host }}", port: 8080, api_key: "{{ vault_key }}"}
  - {name: gone, state: absent}
llama_server_models: [{url: "https://h/small.gguf", checksum: "sha256:ab"}]
_llama_fleet_placing: "{{ llama_fleet_deployments is defined }}"
_llama_fleet_read_gateway: "{{ 'h1' in ['gw1'] }}"
"""


def _role_variables(tmp_path, more: str = ""):
    """The role's defaults and vars, then the host's, as one vars file (a host's variables in a role's task). The
    instances are the hand-placed ones and the replicas, without the role's filter of a cordoned host's (the
    collection's filters are not loaded here)."""
    values = {**yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()),
              **yaml.safe_load((ROLE / "vars" / "main.yml").read_text()),
              "_llama_server_all_instances": "{{ llama_server_instances + llama_server_placed_instances }}",
              **yaml.safe_load(HOST_VARS + more)}
    return host_variables(tmp_path, yaml.safe_dump(values))


@pytest.mark.parametrize("more", ["", "\nllama_fleet_deployments: [{name: tiny, preset: small}]",
                                  "\nllama_server_engine_version: b1"])
def test_the_judges_options_are_the_role_variables_templated(tmp_path, more):
    variables, templar, loader = _role_variables(tmp_path, more)
    found = role_vars.judge_options(templar, variables)
    # What the role's task would give with each option as a template of its variable.
    expected = {option: templar.template(trusted("{{ " + name + " }}"))
                for option, name in role_vars.JUDGE_OPTIONS.items()}
    (expected["settings"],) = LookupModule(loader=loader, templar=templar).run(["llama_server"], variables)
    assert found == expected
    assert found["instances"][0]["host"] == "10.0.0.7"
    assert found["settings"]["models_dir"] == "/srv/llm/models"
    assert found["place"] is ("llama_fleet_deployments" in more)
    assert found["lock_lease_s"] == 600
    assert found["read_gateway"] is False


def test_the_gateway_settings_a_host_sets_are_read_templated_and_the_secret_ones_only_when_asked(tmp_path):
    variables, templar, _loader = _role_variables(
        tmp_path, "\nllama_gateway_port: 8001\nllama_gateway_config_path: '{{ llama_server_home }}/haproxy.cfg'"
                  "\nllama_gateway_api_keys: ['{{ vault_key }}']")
    assert role_vars.gateway_variables(templar, variables) == {
        "port": 8001, "config_path": "/srv/llm/haproxy.cfg", "api_keys": ["k-secret-key-77"]}
    assert role_vars.gateway_variables(templar, variables, secrets=False) == {
        "port": 8001, "config_path": "/srv/llm/haproxy.cfg"}


def test_a_variable_the_host_lacks_gives_no_option(tmp_path):
    variables, templar, _loader = _role_variables(tmp_path)
    del variables["llama_fleet_lock_lease_s"], variables["_llama_fleet_placing"], variables["_llama_fleet_read_gateway"]
    found = role_vars.judge_options(templar, variables)
    assert "lock_lease_s" not in found
    assert "place" not in found


def test_a_setting_the_host_lacks_or_a_variable_that_cannot_be_templated_is_named(tmp_path):
    variables, templar, _loader = _role_variables(tmp_path)
    del variables["llama_server_home"]
    with pytest.raises(KeyError, match="llama_server_home"):
        role_vars.judge_options(templar, variables)
    variables, templar, _loader = _role_variables(tmp_path, '\nllama_server_engine_bin: "{{ nowhere_defined }}"')
    with pytest.raises(role_vars.RoleVariableError, match=r"^llama_server_engine_bin: .*nowhere_defined"):
        role_vars.judge_options(templar, variables)
