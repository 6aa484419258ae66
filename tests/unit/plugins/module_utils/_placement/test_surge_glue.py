"""The surge's glue in _placement/deployments.py: which running replicas get a start-first copy (renewals), the
names of the copies (name_placements), each host's share (host_changes) and when the running copy may go
(removable). Table-driven, from judge readings."""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement import deployments as glue
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    HostReading,
    PlacedReplica,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.fleet_placement import place


def reading(ram_free, placed=()):
    return HostReading(capacity=HostCapacity(ram_free_mib=ram_free), placed=tuple(placed))


def replica(instance, deployment, number, port, *, current=True):
    return PlacedReplica(instance=instance, deployment=deployment, replica=number, port=port, memory_mib=600,
                         current=current)


@pytest.mark.parametrize(("running", "copy"), [("a-0", "a-0-b"), ("a-0-b", "a-0")])
def test_a_copy_beside_its_running_copy_takes_the_other_name(running, copy):
    assert glue.copy_name("a", 0, running) == copy
    assert glue.replica_names("a", 0) == ("a-0", "a-0-b")


# h1 runs a-0 (plan changed) and a-1 (plan changed, under its second name); h2 runs a-2 (current) and b-0 (changed).
READINGS = {"h1": reading(7000, [replica("a-0", "a", 0, 8080, current=False),
                                 replica("a-1-b", "a", 1, 8081, current=False)]),
            "h2": reading(900, [replica("a-2", "a", 2, 8080), replica("b-0", "b", 0, 8081, current=False)])}
CURRENT = [{"deployment": d, "replica": r, "host": h} for h, d, r in
           (("h1", "a", 0), ("h1", "a", 1), ("h2", "a", 2), ("h2", "b", 0))]


@pytest.mark.parametrize(("surge", "cordoned", "expected"), [
    ({"a": 1, "b": 1}, [], [("a", 0), ("b", 0)]),
    ({"a": 5}, [], [("a", 0), ("a", 1)]),  # a-2 runs its plan: nothing to renew
    ({}, [], []),
    ({"a": 2, "b": 1}, ["h1"], [("b", 0)]),  # a cordoned host's replicas move anyway
])
def test_renewals(surge, cordoned, expected):
    found = glue.renewals(READINGS, CURRENT, surge, cordoned)
    assert [(entry["deployment"], entry["replica"]) for entry in found] == expected


def test_a_replica_counted_on_another_host_is_not_renewed_here():
    """b-0 found on h2 but counted on h1 (its other copy): h2's copy is a duplicate to remove, not to renew."""
    current = [*CURRENT[:3], {"deployment": "b", "replica": 0, "host": "h1"}]
    assert glue.renewals(READINGS, current, {"b": 1}) == []


def surge_run():
    """a (binpack, 3 x 600 MiB) with its two replicas on h1 renewed: h1 has room for both copies beside them, h2 for
    none (500 MiB free beside a-2)."""
    wanted = [{"name": "a", "replicas": 3, "memory_mib": 600, "policy": "binpack"}]
    hosts = [{"name": "h1", "ram_free_mib": 7000, "ram_margin_mib": 0}, {"name": "h2", "ram_free_mib": 500,
                                                                         "ram_margin_mib": 0}]
    current = [{"deployment": "a", "replica": r, "host": h, "gpus": [], "memory_mib": 600, "port": p}
               for h, r, p in (("h1", 0, 8080), ("h1", 1, 8081), ("h2", 2, 8080))]
    readings = {"h1": READINGS["h1"], "h2": reading(500, [replica("a-2", "a", 2, 8080)])}
    result = place(wanted, hosts, current, renew=glue.renewals(readings, current, {"a": 2}))
    glue.name_placements(result, readings)
    return result, readings


def test_copies_on_their_own_host_take_the_other_name_and_the_running_copies_go_after():
    result, readings = surge_run()
    named = {(p["replica"], p["host"]): (p["instance"], (p.get("renews") or {}).get("instance"))
             for p in result["placements"]}
    assert named == {(0, "h1"): ("a-0-b", "a-0"), (1, "h1"): ("a-1", "a-1-b"), (2, "h2"): ("a-2", None)}
    shares = glue.host_changes(result, readings)
    assert [entry["name"] for entry in shares["h1"]["instances"]] == ["a-0-b", "a-1"]
    assert shares["h1"]["remove"] == ["a-0", "a-1-b"]
    assert shares["h1"]["changed"] is True
    assert shares["h2"] == {"instances": [{"name": "a-2", "deployment": "a", "replica": 2, "port": 8080,
                                           "cuda_visible_devices": ""}], "remove": [], "moved_to": {},
                            "changed": False}
    instances = glue.placed_instances(shares["h1"]["instances"], [{"name": "a", "preset": "tiny"}])
    assert [(item["name"], item["placement"]) for item in instances] == [
        ("a-0-b", {"deployment": "a", "replica": 0}), ("a-1", {"deployment": "a", "replica": 1})]
    # New ports, not those the running copies hold until they go.
    assert {entry["port"] for entry in shares["h1"]["instances"]}.isdisjoint({8080, 8081})


@pytest.mark.parametrize(("rows", "gone"), [
    ([{"instance": "a-0-b", "state": "deployed", "runs_plan": True}], ["a-0"]),
    ([{"instance": "a-0-b", "state": "failed", "runs_plan": False}], []),  # the failed copy was removed: a-0 stays
    ([{"instance": "a-0", "state": "deployed", "runs_plan": True}], []),  # the old name's row is not the copy's
    ([], []),
])
def test_the_running_copy_goes_once_its_copy_serves(rows, gone):
    result, readings = surge_run()
    assert glue.removable(["a-0"], result, {"h1": rows}) == gone
    assert glue.removable(["a-0"], glue.host_changes(result, readings)["h1"], {"h1": rows}) == gone


def test_a_kept_replica_keeps_its_second_name():
    """a-1 runs as a-1-b (an earlier renewal on its host) and runs its plan: it stays as it is, not renamed."""
    readings = {"h1": reading(7000, [replica("a-1-b", "a", 1, 8081)])}
    result = place([{"name": "a", "replicas": 2, "memory_mib": 600, "policy": "binpack"}],
                   [{"name": "h1", "ram_free_mib": 7000}],
                   [{"deployment": "a", "replica": 1, "host": "h1", "gpus": [], "memory_mib": 600, "port": 8081}])
    glue.name_placements(result, readings)
    assert sorted(p["instance"] for p in result["placements"]) == ["a-0", "a-1-b"]
    assert glue.host_changes(result, readings)["h1"]["remove"] == []


def test_a_hand_placed_instance_may_not_take_a_second_name():
    errors = glue.deployment_errors([{"name": "a", "preset": "tiny", "replicas": 2}], {"tiny": {"model": "t.gguf"}},
                                    [{"name": "a-1-b"}], listed_as="llama_fleet_deployments",
                                    hand_listed_as="llama_server_instances")
    assert errors == ["deployment a: its replica name(s) a-1-b are taken by instances of llama_server_instances on "
                      "this host; rename one or the other"]
