"""The deploy playbook's placement action: the judges' readings in, the placement and each host's share out; a
replica with no room, a need no host could plan and a --limit are refused (refused: true, the playbook fails every
host), and nothing runs on any host."""

from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_deployments as action_module
from tests.unit.support import actions

DEPLOYMENTS = [{"name": "tiny", "preset": "tiny", "replicas": 2, "api_key": "k-never-returned-7"},
               {"name": "gemma", "preset": "gemma", "replicas": 1}]


def judged(ram_free, estimates, placed=()):
    return {"_llama_server_judgement": {"placement": {
        "capacity": {"ram_free_mib": ram_free, "gpus": [], "ports_used": [22]},
        "placed": list(placed), "estimates": estimates, "versions": {"tiny": "v1", "gemma": "v2"}}}}


NEEDS = {"tiny": {"memory_mib": 78, "ram_mib": 0}, "gemma": {"memory_mib": 826, "ram_mib": 0}}


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
    unknown = {"tiny": {"why": "the host is not ready to plan yet"}, "gemma": {"memory_mib": 826}}
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
