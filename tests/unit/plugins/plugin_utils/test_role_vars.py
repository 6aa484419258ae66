"""A host's variables as the controller's plugins read them: one home for each variable's name and default."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars

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
