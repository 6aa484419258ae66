"""The deploy playbook's placement action: the judges' readings in, the placement and each host's share out; a
replica with no room, a need no host could plan and a --limit are refused (refused: true, the playbook fails every
host), and nothing runs on any host."""

from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_deployments as action_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    HostReading,
    Need,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import preset_version
from tests.unit.support import actions

DEPLOYMENTS = [{"name": "tiny", "preset": "tiny", "replicas": 2, "api_key": "k-never-returned-7"},
               {"name": "gemma", "preset": "gemma", "replicas": 1}]


def judged(ram_free, estimates, placed=(), **variables):
    """A host's variables after its judge: the reading as the judge sends it, and its own variables."""
    reading = HostReading(capacity=HostCapacity(ram_free_mib=ram_free, ports_used=(22,)), placed=tuple(placed),
                          estimates=estimates)
    return {"_llama_server_judgement": {"placement": reading.as_dict()}, **variables}


NEEDS = {"tiny": Need(memory_mib=78), "gemma": Need(memory_mib=826)}


def run_action(hostvars, deployments=None, hosts=("h1", "h2"), fleet=None, check_mode=False):
    args = {"deployments": deployments or DEPLOYMENTS, "hosts": list(hosts), "fleet": fleet}
    result, calls = actions.run_action(action_module, args, task_vars={"hostvars": hostvars}, check_mode=check_mode)
    assert calls == []  # nothing is sent to any host
    return result


def test_places_every_replica_and_gives_each_host_its_share():
    result = run_action({"h1": judged(8000, NEEDS), "h2": judged(6000, NEEDS)})
    assert result["refused"] is False
    assert "failed" not in result
    assert result["placement"]["unplaced"] == []
    assert [entry["name"] for entry in result["hosts"]["h1"]["instances"]] == ["gemma-0", "tiny-0"]
    assert [entry["name"] for entry in result["hosts"]["h2"]["instances"]] == ["tiny-1"]
    assert result["table"][0].startswith("deployment")
    assert [row["deployment"] for row in result["deployments"]] == ["gemma", "tiny"]
    assert "k-never-returned-7" not in repr(result)


def test_a_replica_without_room_is_refused_naming_its_need():
    result = run_action({"h1": judged(1500, NEEDS), "h2": judged(1200, NEEDS)})
    assert result["refused"] is True
    assert result["failed"] is True
    assert ("deployment gemma replica 0: needs 826 MiB of RAM; the best candidate, h1, has" in result["msg"])
    assert result["msg"].endswith("(nothing was changed)")
    assert result["table"]  # the table is still printed


def test_a_need_no_host_could_plan_is_refused_and_check_mode_says_why():
    unknown = {"tiny": Need(why="the host is not ready to plan yet"), "gemma": Need(memory_mib=826)}
    result = run_action({"h1": judged(8000, unknown), "h2": judged(8000, unknown)}, check_mode=True)
    assert result["refused"] is True
    assert result["msg"].startswith("deployment tiny: its memory need is unknown: no host could estimate it (h1: ")
    assert "in check mode a host that lacks the engine" in result["msg"]


def test_a_limit_that_leaves_fleet_hosts_out_is_refused():
    result = run_action({"h1": judged(8000, NEEDS)}, hosts=["h1"], fleet=["h1", "h2", "h3"])
    assert result["refused"] is True
    assert "--limit leaves out h2, h3" in result["msg"]


def test_a_host_without_readings_is_left_out():
    result = run_action({"h1": judged(8000, NEEDS), "h2": {}}, deployments=[{"name": "gemma", "replicas": 1}])
    assert result["refused"] is False
    assert set(result["hosts"]) == {"h1"}


PRESETS = {"tiny": {"model": "tiny.gguf", "ctx": 2048}, "gemma": {"model": "gemma.gguf"}}


def test_each_hosts_variables_and_the_deployments_versions_reach_the_placement(monkeypatch):
    given, place = {}, action_module.place

    def spy(wanted, hosts, current):
        given.update(wanted=wanted, hosts=hosts)
        return place(wanted, hosts, current)

    monkeypatch.setattr(action_module, "place", spy)
    result = run_action({"h1": judged(8000, NEEDS, llama_server_presets=PRESETS, llama_fleet_labels={"zone": "a"},
                                      llama_fleet_ram_margin_mib=512, llama_fleet_port_range=[9000, 9010]),
                         "h2": judged(6000, NEEDS, llama_fleet_gpu_margin_mib=None)})
    assert result["refused"] is False
    assert [host["name"] for host in given["hosts"]] == ["h1", "h2"]
    assert given["hosts"][0] == {**given["hosts"][0], "labels": {"zone": "a"}, "ram_margin_mib": 512,
                                 "gpu_margin_mib": 1024, "port_range": [9000, 9010]}
    assert given["hosts"][1] == {**given["hosts"][1], "labels": {}, "ram_margin_mib": 1024, "gpu_margin_mib": 1024}
    assert "port_range" not in given["hosts"][1]
    # The versions are the first read host's, as its judge layered the deployments with its presets.
    assert {d["name"]: d["version"] for d in given["wanted"]} == {
        "gemma": preset_version({"MODEL": "gemma.gguf"}), "tiny": preset_version({"MODEL": "tiny.gguf", "CTX": 2048})}


def test_a_margin_place_cannot_read_is_refused_naming_the_host():
    result = run_action({"h1": judged(8000, NEEDS, llama_fleet_ram_margin_mib="lots"), "h2": judged(6000, NEEDS)})
    assert result["refused"] is True
    assert result["msg"] == ("llama_fleet_deployments: hosts[0] (h1).ram_margin_mib: 'lots' is not an integer from 0 "
                             "to 1099511627776 (nothing was changed)")
