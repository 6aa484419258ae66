"""fleet_placement.place: table cases for each rule, and properties against an exhaustive search on small fleets."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.llamafleet.llamacpp.plugins.module_utils.fleet_placement import PlacementError, place


def gpu_host(name, *free, total=24576, labels=None, **more):
    cards = [{"uuid": f"GPU-{name}-{index}", "index": index, "total_mib": total, "free_mib": mib}
             for index, mib in enumerate(free)]
    return {"name": name, "ram_free_mib": more.pop("ram_free_mib", 65536), "gpus": cards, "labels": labels or {},
            **more}


def ram_host(name, free, labels=None, **more):
    return {"name": name, "ram_free_mib": free, "labels": labels or {}, **more}


def where(result):
    return {(p["deployment"], p["replica"]): (p["host"], tuple(p["gpus"])) for p in result["placements"]}


# ---------------------------------------------------------------- table cases
@pytest.mark.parametrize(
    ("deployments", "hosts", "expected"),
    [
        pytest.param([{"name": "a", "replicas": 2, "memory_mib": 1000}], [ram_host("h1", 8000), ram_host("h2", 4000)],
                     {("a", 0): ("h1", ()), ("a", 1): ("h2", ())}, id="spread-distinct-hosts"),
        pytest.param([{"name": "a", "replicas": 2, "memory_mib": 1000, "policy": "binpack"}],
                     [ram_host("h1", 8000), ram_host("h2", 4000)],
                     {("a", 0): ("h2", ()), ("a", 1): ("h2", ())}, id="binpack-tightest-host"),
        pytest.param([{"name": "a", "replicas": 1, "memory_mib": 2000, "labels": {"zone": "b"}}],
                     [ram_host("h1", 8000, {"zone": "a"}), ram_host("h2", 4000, {"zone": "b"})],
                     {("a", 0): ("h2", ())}, id="labels-required"),
        pytest.param([{"name": "a", "replicas": 1, "memory_mib": 2000, "labels": ["fast"]}],
                     [ram_host("h1", 8000), ram_host("h2", 4000, ["fast=yes"])],
                     {("a", 0): ("h2", ())}, id="label-any-value"),
        pytest.param([{"name": "g", "replicas": 1, "memory_mib": 30000, "gpus": 2, "policy": "binpack"}],
                     [gpu_host("h1", 24000, 24000, 14000)],
                     {("g", 0): ("h1", ("GPU-h1-0", "GPU-h1-1"))}, id="two-cards-that-fit"),
        pytest.param([{"name": "g", "replicas": 1, "memory_mib": 10000, "gpus": 1, "policy": "binpack"}],
                     [gpu_host("h1", 24000, 12000, 11500)],
                     {("g", 0): ("h1", ("GPU-h1-2",))}, id="binpack-tightest-card"),
        pytest.param([{"name": "g", "replicas": 1, "memory_mib": 10000, "gpus": 1}],
                     [gpu_host("h1", 24000, 12000, 11500)],
                     {("g", 0): ("h1", ("GPU-h1-0",))}, id="spread-roomiest-card"),
        # 1024 MiB margin per card: 11000 free leaves 9976, short of 10000.
        pytest.param([{"name": "g", "replicas": 1, "memory_mib": 10000, "gpus": 1}],
                     [gpu_host("h1", 11000)], {}, id="card-margin-kept"),
        pytest.param([{"name": "g", "replicas": 1, "memory_mib": 10000, "gpus": 1}],
                     [gpu_host("h1", 11000, gpu_margin_mib=512)], {("g", 0): ("h1", ("GPU-h1-0",))},
                     id="card-margin-per-host"),
        pytest.param([{"name": "g", "replicas": 1, "memory_mib": 10000, "gpus": 1, "ram_mib": 4000}],
                     [gpu_host("h1", 24000, ram_free_mib=2000), gpu_host("h2", 16000, ram_free_mib=8000)],
                     {("g", 0): ("h2", ("GPU-h2-0",))}, id="gpu-replica-ram"),
        pytest.param([{"name": "a", "replicas": 0, "memory_mib": 1000}], [ram_host("h1", 8000)], {},
                     id="zero-replicas"),
    ],
)
def test_where_replicas_go(deployments, hosts, expected):
    result = place(deployments, hosts)
    assert where(result) == expected


def test_every_replica_says_why_and_ports_avoid_hand_placed_ones():
    result = place([{"name": "a", "replicas": 2, "memory_mib": 1000, "policy": "binpack"}],
                   [ram_host("h1", 8000, ports_used=[8080, 8082])])
    assert [p["port"] for p in result["placements"]] == [8081, 8083]
    assert all("binpack: the tightest fit of the 1 host(s) with room for it" in p["why"] for p in result["placements"])
    assert all("needs 1000 MiB of RAM" in p["why"] for p in result["placements"])


def test_no_port_left_is_unplaced_naming_the_range():
    result = place([{"name": "a", "replicas": 2, "memory_mib": 100, "policy": "binpack"}],
                   [ram_host("h1", 8000, port_range=[9000, 9001], ports_used=[9000])])
    assert [p["port"] for p in result["placements"]] == [9001]
    assert result["unplaced"] == [{"deployment": "a", "replica": 1, "why": "h1 has no free port from 9000 to 9001"}]


@pytest.mark.parametrize(
    ("deployment", "hosts", "why"),
    [
        pytest.param({"name": "a", "memory_mib": 9000}, [ram_host("h1", 8000), ram_host("h2", 6000)],
                     "needs 9000 MiB of RAM; the best candidate, h1, has 6976 MiB of RAM free after its margin",
                     id="ram"),
        pytest.param({"name": "g", "memory_mib": 60000, "gpus": 2}, [gpu_host("h1", 24000, 20000, 8000)],
                     "needs 2 card(s) with 30000 MiB free each; the best candidate, h1, has 2 card(s) with "
                     "22976/18976 MiB free after the margin", id="cards"),
        pytest.param({"name": "a", "memory_mib": 10, "labels": {"gpu": "h100"}}, [ram_host("h1", 8000)],
                     "needs 10 MiB of RAM on a host labelled gpu=h100: no host has these labels", id="labels"),
        pytest.param({"name": "a", "memory_mib": 10, "replicas": 2}, [ram_host("h1", 8000)],
                     "needs 10 MiB of RAM; spread: each of the 1 host(s) with its labels already runs one of its "
                     "replicas (the best of them, h1, has 6966 MiB of RAM free after its margin)", id="spread-short"),
    ],
)
def test_an_unplaced_replica_names_its_need_and_the_best_candidate(deployment, hosts, why):
    result = place([deployment], hosts)
    assert result["unplaced"][-1]["why"] == why
    assert "placement.unplaced" in [note["id"] for note in result["notes"]]


@pytest.mark.parametrize(
    ("deployments", "hosts", "current", "message"),
    [
        ([{"name": "a b", "memory_mib": 1}], [], None, "deployments[0].name: 'a b' is not a name"),
        ([{"name": "a", "memory_mib": "lots"}], [], None, "deployments[0] (a).memory_mib: 'lots' is not an integer"),
        ([{"name": "a", "memory_mib": 0}], [], None, "deployments[0] (a).memory_mib: 0 is not an integer from 1"),
        ([{"name": "a", "memory_mib": 1, "replicas": True}], [], None, "deployments[0] (a).replicas: True"),
        ([{"name": "a", "memory_mib": 1, "policy": "random"}], [], None, "policy: 'random' is not one of spread"),
        ([{"name": "a", "memory_mib": 1}, {"name": "a", "memory_mib": 2}], [], None, "'a' is listed twice"),
        ([{"name": "a", "memory_mib": 1, "labels": "zone=a"}], [], None, "is not a mapping of label to value"),
        ([], [{"name": "h", "ram_free_mib": -1}], None, "hosts[0] (h).ram_free_mib: -1"),
        ([], [{"name": "h", "gpus": [{"uuid": "G", "total_mib": 1, "free_mib": 1}] * 2}], None, "listed twice"),
        ([], [{"name": "h", "port_range": [9000, 8000]}], None, "ends before it starts"),
        ([], [], [{"deployment": "a", "replica": 0, "host": ""}], "current[0].host: '' is not a host name"),
        ([], "hosts", None, "hosts: str is not a list of hosts"),
    ],
)
def test_unreadable_input_is_refused_naming_the_field(deployments, hosts, current, message):
    with pytest.raises(PlacementError) as err:
        place(deployments, hosts, current)
    assert message in str(err.value)


# ---------------------------------------------------------------- stability
FLEET = [ram_host("h1", 16000), ram_host("h2", 16000), gpu_host("g1", 24000, 24000), gpu_host("g2", 24000, 24000)]
WANTED = [{"name": "chat", "replicas": 2, "memory_mib": 3000},
          {"name": "big", "replicas": 1, "memory_mib": 40000, "gpus": 2, "policy": "binpack"}]


def test_what_runs_stays_when_a_host_or_deployment_is_added():
    first = place(WANTED, FLEET)
    again = place([*WANTED, {"name": "extra", "replicas": 2, "memory_mib": 2000}],
                  [*FLEET, ram_host("h0", 64000)], first["placements"])
    before = where(first)
    assert {k: v for k, v in where(again).items() if k in before} == before
    kept = {(p["deployment"], p["replica"]): p["port"] for p in again["placements"] if p["deployment"] != "extra"}
    assert kept == {(p["deployment"], p["replica"]): p["port"] for p in first["placements"]}
    assert {"id": "placement.kept", "text": "3 replica(s) stay where they run"} in again["notes"]


def test_a_replica_whose_host_left_moves_and_says_so():
    first = place(WANTED, FLEET)
    old_host = where(first)[("chat", 0)][0]
    again = place(WANTED, [host for host in FLEET if host["name"] != old_host], first["placements"])
    moved = next(p for p in again["placements"] if (p["deployment"], p["replica"]) == ("chat", 0))
    assert moved["moved_from"] == old_host
    assert f"moved from {old_host}: {old_host} is no longer a host of the fleet" in moved["why"]
    stayed = {k: v for k, v in where(first).items() if v[0] != old_host}
    assert stayed
    assert {k: v for k, v in where(again).items() if k in stayed} == stayed


def test_a_removed_deployment_frees_nothing_in_the_same_placement():
    """Its replicas still run until the rollout removes them: their memory is not given to another."""
    current = [{"deployment": "old", "replica": 0, "host": "h1", "gpus": [], "memory_mib": 6000, "port": 8080}]
    result = place([{"name": "new", "replicas": 1, "memory_mib": 6000}], [ram_host("h1", 2000)], current)
    assert result["placements"] == []
    assert {"id": "placement.removed", "text": "old/0 on h1 goes: its deployment old is no longer listed"} in \
        result["notes"]


def test_a_running_replica_counts_its_own_memory_as_room():
    """The free figure excludes what it holds: a need that grows by less than the free room keeps it there."""
    current = [{"deployment": "a", "replica": 0, "host": "h1", "gpus": [], "memory_mib": 6000, "port": 8085}]
    result = place([{"name": "a", "replicas": 1, "memory_mib": 7000}], [ram_host("h1", 3000), ram_host("h2", 9000)],
                   current)
    assert where(result) == {("a", 0): ("h1", ())}
    assert result["placements"][0]["port"] == 8085
    grown = place([{"name": "a", "replicas": 1, "memory_mib": 9000}], [ram_host("h1", 3000), ram_host("h2", 11000)],
                  current)
    assert grown["placements"][0]["moved_from"] == "h1"


def test_a_kept_replicas_memory_is_not_given_to_another():
    """h1 has 500 MiB free beside a-0's 1000: a-0 stays, and b (1000) does not fit there (it once did: the memory
    a-0 holds was counted as room for it, and then for b too)."""
    current = [{"deployment": "a", "replica": 0, "host": "h1", "gpus": [], "memory_mib": 1000, "port": 8080}]
    result = place([{"name": "a", "replicas": 1, "memory_mib": 1000}, {"name": "b", "replicas": 1, "memory_mib": 1000}],
                   [ram_host("h1", 500, ram_margin_mib=0)], current)
    assert where(result) == {("a", 0): ("h1", ())}
    assert [entry["deployment"] for entry in result["unplaced"]] == ["b"]


# ---------------------------------------------------------------- host states: frozen and cordoned
RUNS_ON_H1 = [{"deployment": "a", "replica": 0, "host": "h1", "gpus": [], "memory_mib": 4000, "port": 8081}]


@pytest.mark.parametrize(
    ("state", "h1_free", "replicas", "expected", "unplaced"),
    [
        # Frozen: what runs there stays, whatever room the record says it has; nothing new goes there.
        pytest.param("frozen", 0, 2, {("a", 0): ("h1", ()), ("a", 1): ("h2", ())}, 0, id="frozen-keeps-its-replica"),
        pytest.param("frozen", 64000, 3, {("a", 0): ("h1", ()), ("a", 1): ("h2", ())}, 1,
                     id="frozen-takes-nothing-new"),
        # Cordoned: its replica moves, and nothing new goes there.
        pytest.param("cordoned", 64000, 1, {("a", 0): ("h2", ())}, 0, id="cordoned-moves-its-replica"),
        pytest.param("cordoned", 64000, 2, {("a", 0): ("h2", ())}, 1, id="cordoned-takes-nothing-new"),
        pytest.param("open", 64000, 2, {("a", 0): ("h1", ()), ("a", 1): ("h2", ())}, 0, id="open-as-before"),
    ],
)
def test_a_host_state_says_what_the_placement_may_do_there(state, h1_free, replicas, expected, unplaced):
    result = place([{"name": "a", "replicas": replicas, "memory_mib": 4000}],
                   [ram_host("h1", h1_free, state=state), ram_host("h2", 9000)], RUNS_ON_H1)
    assert where(result) == expected
    assert len(result["unplaced"]) == unplaced
    moved = [p for p in result["placements"] if p.get("moved_from")]
    assert [p["moved_from"] for p in moved] == (["h1"] if state == "cordoned" else [])
    if state == "cordoned":
        assert "moved from h1: h1 is cordoned" in moved[0]["why"]
    if state == "frozen":
        assert result["placements"][0]["port"] == 8081


def test_a_frozen_replica_above_the_count_is_not_kept():
    """It goes once its host is in a run; meanwhile it is not counted as one of the deployment's replicas."""
    current = [*RUNS_ON_H1, {"deployment": "a", "replica": 1, "host": "h1", "gpus": [], "memory_mib": 4000,
                             "port": 8082}]
    result = place([{"name": "a", "replicas": 1, "memory_mib": 4000}],
                   [ram_host("h1", 0, state="frozen"), ram_host("h2", 9000)], current)
    assert where(result) == {("a", 0): ("h1", ())}
    assert {"id": "placement.removed", "text": "a/1 on h1 goes: a has 1 replica(s) now"} in result["notes"]


def test_spread_counts_a_frozen_hosts_replica_as_occupying_it():
    result = place([{"name": "a", "replicas": 2, "memory_mib": 1000}],
                   [ram_host("h1", 0, state="frozen"), ram_host("h2", 9000)], RUNS_ON_H1)
    assert where(result) == {("a", 0): ("h1", ()), ("a", 1): ("h2", ())}


def test_no_open_host_with_the_labels_says_so():
    result = place([{"name": "a", "replicas": 1, "memory_mib": 1000, "labels": {"zone": "b"}}],
                   [ram_host("h1", 9000, {"zone": "b"}, state="cordoned"), ram_host("h2", 9000, {"zone": "a"})])
    assert result["unplaced"][0]["why"] == ("needs 1000 MiB of RAM on a host labelled zone=b: the only ones, h1, take "
                                            "no new replica in this run (cordoned, or not in it)")


def test_an_unknown_host_state_is_refused_naming_it():
    with pytest.raises(PlacementError, match=r"hosts\[0\] \(h1\)\.state: 'drained' is not one of open, frozen, "
                                             "cordoned"):
        place([], [ram_host("h1", 1000, state="drained")])


def test_the_same_input_in_another_order_gives_the_same_placement():
    deployments = [*WANTED, {"name": "x", "replicas": 3, "memory_mib": 1000, "labels": {"b": "1", "a": "2"}}]
    hosts = [*FLEET, ram_host("h3", 9000, {"a": "2", "b": "1"})]
    first = place(deployments, hosts)
    shuffled = random.Random(7)
    for _attempt in range(5):
        other_d, other_h = deployments[:], hosts[:]
        shuffled.shuffle(other_d)
        shuffled.shuffle(other_h)
        other_d[-1] = {**other_d[-1], "labels": dict(reversed(list((other_d[-1].get("labels") or {}).items())))}
        assert place(other_d, other_h) == first
    assert json.loads(json.dumps(first)) == first


# ---------------------------------------------------------------- properties against an exhaustive search
MARGIN = 1024


def exhaustive_best(deployments, hosts) -> int:
    """The most replicas any placement holds: every assignment of every replica tried (small fleets only)."""
    replicas = [(d, i) for d in deployments for i in range(d.get("replicas", 1))]
    options_for = {}
    for d in deployments:
        opts = [None]
        for host in hosts:
            if d.get("gpus", 0) == 0:
                opts.append((host["name"], ()))
            else:
                for cards in itertools.combinations([c["uuid"] for c in host.get("gpus", [])], d["gpus"]):
                    opts.append((host["name"], cards))
        options_for[d["name"]] = opts
    best = 0
    for combo in itertools.product(*(options_for[d["name"]] for d, _i in replicas)):
        ram = {h["name"]: h["ram_free_mib"] - MARGIN for h in hosts}
        card = {c["uuid"]: c["free_mib"] - MARGIN for h in hosts for c in h.get("gpus", [])}
        used = set()
        ok = True
        for (d, _i), option in zip(replicas, combo, strict=True):
            if option is None:
                continue
            host, cards = option
            if d.get("policy", "spread") == "spread":
                if (d["name"], host) in used:
                    ok = False
                    break
                used.add((d["name"], host))
            if d.get("gpus", 0):
                per = -(-d["memory_mib"] // d["gpus"])
                for uuid in cards:
                    card[uuid] -= per
            else:
                ram[host] -= d["memory_mib"]
        if ok and min(ram.values(), default=0) >= 0 and min(card.values(), default=0) >= 0:
            best = max(best, sum(option is not None for option in combo))
    return best


def check_not_overcommitted(result, deployments, hosts):
    by_name = {d["name"]: d for d in deployments}
    ram = {h["name"]: h["ram_free_mib"] - MARGIN for h in hosts}
    card = {c["uuid"]: c["free_mib"] - MARGIN for h in hosts for c in h.get("gpus", [])}
    seen_hosts = set()
    for placement in result["placements"]:
        d = by_name[placement["deployment"]]
        assert len(placement["gpus"]) == d.get("gpus", 0)
        if d.get("policy", "spread") == "spread":
            assert (d["name"], placement["host"]) not in seen_hosts
            seen_hosts.add((d["name"], placement["host"]))
        if d.get("gpus", 0):
            for uuid in placement["gpus"]:
                card[uuid] -= -(-d["memory_mib"] // d["gpus"])
        else:
            ram[placement["host"]] -= d["memory_mib"]
    assert min(ram.values(), default=0) >= 0
    assert min(card.values(), default=0) >= 0


small_host = st.builds(
    lambda name, ram, cards: {"name": name, "ram_free_mib": ram,
                              "gpus": [{"uuid": f"GPU-{name}-{i}", "index": i, "total_mib": 24000, "free_mib": free}
                                       for i, free in enumerate(cards)]},
    st.just(""), st.integers(1024, 9000), st.lists(st.integers(1024, 12000), max_size=2))
small_deployment = st.builds(
    lambda gpus, mib, replicas, policy: {"name": "", "replicas": replicas, "memory_mib": mib, "gpus": gpus,
                                         "policy": policy},
    st.integers(0, 2), st.integers(500, 9000), st.integers(1, 2), st.sampled_from(["spread", "binpack"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(small_host, min_size=1, max_size=3), st.lists(small_deployment, min_size=1, max_size=3))
def test_places_as_many_as_an_exhaustive_search_and_never_overcommits(hosts, deployments):
    hosts = [{**host, "name": f"h{i}", "gpus": [{**c, "uuid": f"GPU-h{i}-{c['index']}"} for c in host["gpus"]]}
             for i, host in enumerate(hosts)]
    deployments = [{**d, "name": f"d{i}"} for i, d in enumerate(deployments)]
    if sum(d["replicas"] for d in deployments) > 4:
        deployments = deployments[:2]
    result = place(deployments, hosts, step_budget=1_000_000)
    check_not_overcommitted(result, deployments, hosts)
    assert len(result["placements"]) == exhaustive_best(deployments, hosts)
    assert len(result["placements"]) + len(result["unplaced"]) == sum(d["replicas"] for d in deployments)


@settings(max_examples=60, deadline=None)
@given(st.lists(small_host, min_size=2, max_size=3), st.lists(small_deployment, min_size=1, max_size=3),
       st.integers(0, 5))
def test_a_second_placement_with_an_unrelated_host_added_moves_nothing(hosts, deployments, seed):
    hosts = [{**host, "name": f"h{i}", "gpus": [{**c, "uuid": f"GPU-h{i}-{c['index']}"} for c in host["gpus"]]}
             for i, host in enumerate(hosts)]
    deployments = [{**d, "name": f"d{i}"} for i, d in enumerate(deployments)]
    first = place(deployments, hosts)
    extra = {"name": f"z{seed}", "ram_free_mib": 64000,
             "gpus": [{"uuid": "GPU-z", "index": 0, "total_mib": 80000, "free_mib": 80000}]}
    # The running replicas hold their memory: the hosts' free figures shrink by it.
    after = []
    for host in hosts:
        mine = [p for p in first["placements"] if p["host"] == host["name"]]
        by_name = {d["name"]: d for d in deployments}
        ram = host["ram_free_mib"] - sum(by_name[p["deployment"]]["memory_mib"] for p in mine if not p["gpus"])
        cards = [{**card, "free_mib": card["free_mib"] - sum(
            -(-by_name[p["deployment"]]["memory_mib"] // len(p["gpus"])) for p in mine if card["uuid"] in p["gpus"])}
            for card in host["gpus"]]
        after.append({**host, "ram_free_mib": ram, "gpus": cards})
    again = place(deployments, [*after, extra], first["placements"])
    before = where(first)
    assert {k: v for k, v in where(again).items() if k in before} == before
