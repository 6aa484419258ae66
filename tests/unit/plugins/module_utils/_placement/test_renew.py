"""fleet_placement.place with ``renew`` (surge): a running replica starts a new copy first where there is room, its
own host or another, with the running copy's memory still held; without room it gets none. Table-driven."""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils.fleet_placement import PlacementError, place


def ram_host(name, free, **more):
    return {"name": name, "ram_free_mib": free, "ram_margin_mib": 0, **more}


def running(deployment, replica, host, memory=1000, port=8080):
    return {"deployment": deployment, "replica": replica, "host": host, "gpus": [], "memory_mib": memory,
            "port": port}


def copies(result):
    """{(deployment, replica): (host, renewed from host or None)}."""
    return {(p["deployment"], p["replica"]): (p["host"], (p.get("renews") or {}).get("host"))
            for p in result["placements"]}


# The free figures already exclude what runs (the probes read them so): h1 runs a-0 and a-1 (binpack), h2 a-2.
BINPACK = [{"name": "a", "replicas": 3, "memory_mib": 1000, "policy": "binpack"}]
CASES = [
    ("binpack: the tightest host with room takes each copy", BINPACK, [ram_host("h1", 1500), ram_host("h2", 5000)],
     [running("a", 0, "h1"), running("a", 1, "h1", port=8081), running("a", 2, "h2")],
     [{"deployment": "a", "replica": 0}, {"deployment": "a", "replica": 2}],
     {("a", 0): ("h1", "h1"), ("a", 1): ("h1", None), ("a", 2): ("h2", "h2")}),
    ("no room anywhere: no copy, the replica restarts where it runs", BINPACK,
     [ram_host("h1", 500), ram_host("h2", 900)],
     [running("a", 0, "h1"), running("a", 1, "h1", port=8081), running("a", 2, "h2")],
     [{"deployment": "a", "replica": 0}],
     {("a", 0): ("h1", None), ("a", 1): ("h1", None), ("a", 2): ("h2", None)}),
    ("room for one copy only: the first replica gets it", BINPACK, [ram_host("h1", 1200), ram_host("h2", 0)],
     [running("a", 0, "h1"), running("a", 1, "h1", port=8081), running("a", 2, "h2")],
     [{"deployment": "a", "replica": 1}, {"deployment": "a", "replica": 2}],
     {("a", 0): ("h1", None), ("a", 1): ("h1", "h1"), ("a", 2): ("h2", None)}),
    ("spread: a copy avoids the hosts of the other replicas, not its own",
     [{"name": "s", "replicas": 2, "memory_mib": 1000}],
     [ram_host("h1", 1500), ram_host("h2", 9000), ram_host("h3", 4000)],
     [running("s", 0, "h1"), running("s", 1, "h2")], [{"deployment": "s", "replica": 0}],
     {("s", 0): ("h3", "h1"), ("s", 1): ("h2", None)}),
    ("spread: its own host when it is the only one with room",
     [{"name": "s", "replicas": 2, "memory_mib": 1000}], [ram_host("h1", 1500), ram_host("h2", 9000)],
     [running("s", 0, "h1"), running("s", 1, "h2")], [{"deployment": "s", "replica": 0}],
     {("s", 0): ("h1", "h1"), ("s", 1): ("h2", None)}),
    ("a replica to place keeps its room from the copies",
     [{"name": "a", "replicas": 2, "memory_mib": 1000, "policy": "binpack"}], [ram_host("h1", 1000)],
     [running("a", 0, "h1")], [{"deployment": "a", "replica": 0}],
     {("a", 0): ("h1", None), ("a", 1): ("h1", None)}),
    ("a replica that moves anyway (its host left) is no copy",
     [{"name": "a", "replicas": 1, "memory_mib": 1000}], [ram_host("h2", 5000)],
     [running("a", 0, "h1")], [{"deployment": "a", "replica": 0}], {("a", 0): ("h2", None)}),
    ("a cordoned host takes no copy, and a replica on it moves as before",
     [{"name": "a", "replicas": 1, "memory_mib": 1000}],
     [ram_host("h1", 5000, state="cordoned"), ram_host("h2", 5000)],
     [running("a", 0, "h1")], [{"deployment": "a", "replica": 0}], {("a", 0): ("h2", None)}),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_renew(case):
    _name, deployments, hosts, current, renew, expected = case
    result = place(deployments, hosts, current, renew=renew)
    assert copies(result) == expected
    assert result["unplaced"] == []
    for placement in result["placements"]:
        if placement.get("renews"):
            # A free port, not the running copy's (it holds its port until it goes).
            assert placement["port"] not in {entry["port"] for entry in current if entry["host"] == placement["host"]}
            assert placement["why"].startswith("a new copy starts first (")
            assert placement["why"].endswith(f"the copy on {placement['renews']['host']} goes once it serves")
            assert any(note["id"] == "placement.surge" for note in result["notes"])


def test_a_copy_on_its_own_host_holds_both_memories():
    """h1 has 1500 MiB free beside a-0's 1000: one copy of 1000 fits there; a second copy of a-1 would need 1000
    more, which h1 no longer has, and h2 has none."""
    result = place(BINPACK, [ram_host("h1", 1500), ram_host("h2", 0)],
                   [running("a", 0, "h1"), running("a", 1, "h1", port=8081), running("a", 2, "h2")],
                   renew=[{"deployment": "a", "replica": 0}, {"deployment": "a", "replica": 1}])
    assert copies(result)[("a", 0)] == ("h1", "h1")
    assert copies(result)[("a", 1)] == ("h1", None)


@pytest.mark.parametrize("renew", ["a-0", [{"deployment": "a"}], [{"deployment": "a", "replica": True}], [3]])
def test_an_unreadable_renew_is_refused(renew):
    with pytest.raises(PlacementError, match=r"^renew"):
        place(BINPACK, [ram_host("h1", 5000)], [running("a", 0, "h1")], renew=renew)
