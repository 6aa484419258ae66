"""The deploy playbook's placement filters: a host's share as the role's instances, and the replicas it removes
now, as absent instances, read from the fleet's reports."""

from ansible_collections.llamafleet.llamacpp.plugins.filter.fleet_deployments import FilterModule
from tests.unit.support.counting import CountingDict

FILTERS = FilterModule().filters()
DEPLOYMENTS = [{"name": "tiny", "preset": "tiny", "replicas": 2, "labels": {"zone": "a"}}]


def test_placed_instances_keep_the_instance_fields_only():
    share = [{"name": "tiny-0", "deployment": "tiny", "replica": 0, "port": 8080, "cuda_visible_devices": "-1"}]
    assert FILTERS["placed_instances"](share, DEPLOYMENTS) == [
        {"preset": "tiny", "name": "tiny-0", "port": 8080, "cuda_visible_devices": "-1",
         "placement": {"deployment": "tiny", "replica": 0}}]
    assert FILTERS["placed_instances"](None, DEPLOYMENTS) == []


def test_replicas_to_remove_wait_for_the_new_host():
    placement = {"placements": [{"deployment": "tiny", "replica": 1, "host": "h2"}]}
    hostvars = {"h2": {"llama_server_report": [{"instance": "tiny-1", "state": "deployed", "runs_plan": True}]},
                "h3": {}}
    remove = FILTERS["replicas_to_remove"]
    assert remove(["tiny-1", "tiny-5"], placement, hostvars, ["h2", "h3"]) == [
        {"name": "tiny-1", "state": "absent"}, {"name": "tiny-5", "state": "absent"}]
    # The new host's report is not read (it left this run): the moving replica stays where it runs.
    assert remove(["tiny-1"], placement, hostvars, ["h3"]) == []


def test_replicas_to_remove_read_only_the_new_hosts_reports():
    placement = {"placements": [{"deployment": "tiny", "replica": 1, "host": "h2"},
                                {"deployment": "tiny", "replica": 2, "host": "h2"}]}
    hostvars = CountingDict({f"h{number}": {} for number in range(1, 50)})
    hostvars["h2"] = {"llama_server_report": [{"instance": "tiny-1", "state": "deployed", "runs_plan": True}]}
    remove = FILTERS["replicas_to_remove"]
    assert remove(["tiny-1", "tiny-2"], placement, hostvars, list(hostvars)) == [{"name": "tiny-1", "state": "absent"}]
    assert hostvars.read == ["h2"]


def test_replicas_to_remove_from_the_hosts_share_read_no_placement():
    share = {"remove": ["tiny-1", "tiny-5"],
             "moved_to": {"tiny-1": {"host": "h2", "instance": "tiny-1", "frozen": False}}}
    started = {"instance": "tiny-1", "state": "deployed", "runs_plan": True}
    hostvars = CountingDict({"h2": {"llama_server_report": [started]}, "h3": {}})
    remove = FILTERS["replicas_to_remove"]
    assert remove(share["remove"], share, hostvars, ["h2", "h3"]) == [
        {"name": "tiny-1", "state": "absent"}, {"name": "tiny-5", "state": "absent"}]
    assert hostvars.read == ["h2"]


def test_the_removals_play_holds_the_hosts_that_remove_and_did_not_fail():
    hostvars = {"a": {"_llama_fleet_removals": ["tiny-1"], "llama_fleet_status": "ok"},
                "b": {"_llama_fleet_removals": [], "llama_fleet_status": "ok"},
                "c": {"_llama_fleet_removals": ["tiny-2"], "llama_fleet_status": "failed"},
                "d": {"llama_fleet_status": "ok"}}
    assert FILTERS["removal_hosts"](hostvars, ["a", "b", "c", "d"]) == ["a"]
    assert FILTERS["removal_hosts"](hostvars, ["b", "c", "d"]) == []
    assert FILTERS["removal_hosts"]("syntax check: no hostvars", ["a"]) == []
