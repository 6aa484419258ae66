"""The deploy playbook's placement glue: deployments checked as a host sees them, handed to its judge, turned into
place()'s inputs from the judges' readings, and the result turned back into each host's instances and removals."""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement import deployments as glue
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Card
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import Ledger, LedgerHost, updated
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    HostReading,
    Need,
    PlacedReplica,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.run_scope import KEEP, REPLACE, run_scope
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import preset_version
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.fleet_placement import place

PRESETS = {"tiny": {"model": "tiny.gguf", "ctx": 2048}, "gemma": {"model": "gemma.gguf", "ctx": 4096}}
KEY = "k-deploy-secret-1"


# The names the host action passes for its messages (role_vars.DEPLOYMENTS, role_vars.HAND_INSTANCES).
NAMES = {"listed_as": "llama_fleet_deployments", "hand_listed_as": "llama_server_instances"}


def reading(ram_free, placed=(), estimates=None, gpus=(), ports=()):
    return HostReading(capacity=HostCapacity(ram_free_mib=ram_free, gpus=tuple(gpus), ports_used=tuple(ports)),
                       placed=tuple(placed), estimates=estimates or {})


def replica(instance, deployment, number, port, cards="", *, memory=600, current=True):
    return PlacedReplica(instance=instance, deployment=deployment, replica=number, port=port,
                         cuda_visible_devices=cards, memory_mib=memory, current=current)


# ---------------------------------------------------------------- checks, as each host's judge action makes them
@pytest.mark.parametrize(
    ("deployments", "hand", "expected"),
    [
        pytest.param([{"name": "tiny", "preset": "tiny", "replicas": 2}], [], [], id="fine"),
        pytest.param(None, [], [], id="none-given"),
        pytest.param({"name": "tiny"}, [], ["must be a list of deployments"], id="a-mapping-not-a-list"),
        pytest.param("tiny", [], ["must be a list of deployments"], id="text-not-a-list"),
        pytest.param([["tiny"]], [], ["is not a mapping"], id="item-not-a-mapping"),
        pytest.param([{"name": "tiny", "preset": "tiny", "replica": 2}], [],
                     ["unknown field(s) replica; accepted: name, replicas"], id="misspelt-field"),
        pytest.param([{"name": "tiny", "preset": "tiny", "replicas": "two"}], [],
                     ["llama_fleet_deployments[0] (tiny).replicas: 'two' is not an integer from 0 to 10000"],
                     id="replicas-not-a-number"),
        pytest.param([{"name": "tiny", "preset": "tiny", "policy": "pack"}], [],
                     ["policy: 'pack' is not one of spread, binpack"], id="unknown-policy"),
        pytest.param([{"name": "a b", "preset": "tiny"}], [], ["name: 'a b' is not a name"], id="bad-name"),
        # The longest name a replica may take is its second name (a start-first copy beside the running one).
        pytest.param([{"name": "x" * 60, "preset": "tiny", "replicas": 11}], [],
                     [f"deployment {'x' * 60}: instance name '{'x' * 60}-10-b'"], id="replica-name-too-long"),
        pytest.param([{"name": "tiny", "preset": "nope"}], [],
                     ["deployment tiny: replica tiny-0: preset 'nope' is not"], id="unknown-preset"),
        pytest.param([{"name": "tiny", "preset": "tiny", "settings": {"api-key": "x"}}], [],
                     ["looks like API_KEY"], id="misspelt-secret"),
        pytest.param([{"name": "tiny", "preset": "tiny", "api_key": "bad key"}], [],
                     ["the API key is refused"], id="bad-key"),
        pytest.param([{"name": "tiny", "preset": "tiny", "environment": {"A B": "1"}}], [], ["environment"],
                     id="bad-environment"),
        pytest.param([{"name": "tiny", "preset": "tiny", "replicas": 2}], [{"name": "tiny-1"}],
                     ["its replica name(s) tiny-1 are taken by instances of llama_server_instances"],
                     id="hand-instance-with-a-replica-name"),
        pytest.param([{"name": "tiny", "preset": "tiny"}, {"name": "tiny", "preset": "gemma"}], [],
                     ["'tiny' is listed twice"], id="twice"),
    ],
)
def test_deployment_errors(deployments, hand, expected):
    errors = glue.deployment_errors(deployments, PRESETS, hand, **NAMES)
    assert len(errors) == len(expected), errors
    for error, words in zip(errors, expected, strict=True):
        assert words in error


def test_a_refused_key_is_not_in_the_message():
    errors = glue.deployment_errors([{"name": "t", "preset": "tiny", "api_key": "has space"}], PRESETS, **NAMES)
    assert errors
    assert all("has space" not in error for error in errors)


def test_the_judge_gets_layered_presets_and_the_keys_apart():
    found, keys = glue.judge_deployments(
        [{"name": "tiny", "preset": "tiny", "settings": {"ctx": 1024, "api_key": KEY}, "gpus": 1,
          "environment": {"A": "1"}}, {"name": "gemma", "preset": "gemma", "api_key": KEY}], PRESETS)
    assert keys == {"deployment tiny": KEY, "deployment gemma": KEY}
    assert found[0] == {"name": "tiny", "preset": {"MODEL": "tiny.gguf", "CTX": 1024}, "environment": {"A": "1"},
                        "gpus": 1, "version": found[0]["version"]}
    assert KEY not in repr(found)
    assert len(found[0]["version"]) == 12
    assert found[0]["version"] != found[1]["version"]


def test_the_controller_versions_the_deployments_as_their_judges_do():
    deployments = [{"name": "tiny", "preset": "tiny", "settings": {"ctx": 1024, "host": "10.0.0.1"}},
                   {"name": "lost", "preset": "nope"}]
    found, _keys = glue.judge_deployments(deployments[:1], PRESETS)
    assert glue.deployment_versions(deployments, PRESETS) == {"tiny": found[0]["version"], "lost": ""}
    # Where a replica listens is not its version.
    assert found[0]["version"] == preset_version({"MODEL": "tiny.gguf", "CTX": 1024})


def test_a_found_replica_is_judged_with_its_deployments_preset_and_its_record():
    item = glue.placed_instance({"name": "tiny", "preset": {"MODEL": "t.gguf"}, "environment": {"A": "1"}},
                                replica("tiny-1", "tiny", 1, 8081, "GPU-a,GPU-b"))
    assert item == {"name": "tiny-1",
                    "preset": {"MODEL": "t.gguf", "PORT": 8081, "CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b"},
                    "environment": {"A": "1"},
                    "placement": {"deployment": "tiny", "replica": 1, "port": 8081,
                                  "cuda_visible_devices": "GPU-a,GPU-b"}}


# ---------------------------------------------------------------- the controller's inputs
@pytest.mark.parametrize(
    ("item", "readings", "expected"),
    [
        pytest.param({"name": "t", "memory_mib": 700}, {"h1": reading(1000, estimates={"t": Need(memory_mib=9)})},
                     (700, 0, ""), id="given-wins"),
        pytest.param({"name": "t"}, {"h1": reading(1000, estimates={"t": Need(memory_mib=500)}),
                                     "h2": reading(1000, estimates={"t": Need(memory_mib=650)})},
                     (650, 0, ""), id="largest-estimate"),
        pytest.param({"name": "t"}, {"h1": reading(1000, estimates={"t": Need(why="no model")}),
                                     "h2": reading(1000, estimates={"t": Need(memory_mib=300, ram_mib=5)})},
                     (300, 5, ""), id="one-host-knows"),
        pytest.param({"name": "t"}, {"h1": reading(1000, estimates={"t": Need(why="no model file")})},
                     (0, 0, "no host could estimate it (h1: no model file)"), id="nobody-knows"),
    ],
)
def test_the_need_of_a_deployment(item, readings, expected):
    assert glue._need(item, readings) == expected


def test_placement_inputs_from_the_readings():
    readings = {
        "h1": reading(4000, [replica("tiny-0", "tiny", 0, 8081), replica("old-0", "old", 0, 8082)],
                      estimates={"tiny": Need(memory_mib=600)}, ports=[22, 8080]),
        "h2": reading(3000, estimates={"tiny": Need(memory_mib=610)}),
    }
    wanted, hosts, current, errors, notes = glue.placement_inputs(
        [{"name": "tiny", "replicas": 2, "policy": "spread"}], readings,
        {"h1": {"labels": {"zone": "a"}, "ram_margin_mib": 512, "gpu_margin_mib": 1024}}, {"tiny": "v-tiny"})
    assert errors == []
    assert notes == []
    assert wanted == [{"name": "tiny", "replicas": 2, "policy": "spread", "memory_mib": 610, "ram_mib": 0,
                       "version": "v-tiny"}]
    assert [h["name"] for h in hosts] == ["h1", "h2"]
    assert hosts[0] == {"name": "h1", "labels": {"zone": "a"}, "ram_margin_mib": 512, "gpu_margin_mib": 1024,
                        "ram_free_mib": 4000, "gpus": [], "ports_used": [22, 8080, 8081, 8082],  # its replicas'
                        "state": "open"}
    assert hosts[1] == {"name": "h2", "ram_free_mib": 3000, "gpus": [], "ports_used": [],  # place()'s defaults
                        "state": "open"}
    # The replica of a deployment that is gone is not "current": host_changes removes it.
    assert current == [{"deployment": "tiny", "replica": 0, "host": "h1", "gpus": [], "memory_mib": 600,
                        "port": 8081, "version": ""}]


def test_an_unknown_need_is_an_error_naming_the_deployment():
    _wanted, _hosts, _current, errors, _notes = glue.placement_inputs(
        [{"name": "big"}], {"h1": reading(100, estimates={"big": Need(why="model missing")})}, {})
    assert errors == ["deployment big: its memory need is unknown: no host could estimate it (h1: model missing); "
                      "give it as memory_mib (MiB per replica)"]


# ---------------------------------------------------------------- the result, host by host
def shares_after(deployments, readings):
    wanted, hosts, current, errors, _notes = glue.placement_inputs(deployments, readings, {})
    assert errors == []
    result = place(wanted, hosts, current)
    return result, glue.host_changes(result, readings)


def test_a_new_fleet_gets_every_replica_and_each_host_its_share():
    result, shares = shares_after([{"name": "tiny", "replicas": 2, "memory_mib": 500},
                                   {"name": "gemma", "replicas": 1, "memory_mib": 900}],
                                  {"h1": reading(8000, ports=[8080]), "h2": reading(6000)})
    assert result["unplaced"] == []
    assert shares["h1"] == {"instances": [{"name": "gemma-0", "deployment": "gemma", "replica": 0, "port": 8081,
                                           "cuda_visible_devices": ""},
                                          {"name": "tiny-0", "deployment": "tiny", "replica": 0, "port": 8082,
                                           "cuda_visible_devices": ""}],
                            "remove": [], "moved_to": {}, "changed": True}
    assert [entry["name"] for entry in shares["h2"]["instances"]] == ["tiny-1"]
    assert shares["h2"]["instances"][0]["port"] == 8080  # h2 has nothing on 8080


def test_an_unchanged_fleet_changes_nothing():
    readings = {"h1": reading(7000, [replica("gemma-0", "gemma", 0, 8081, memory=900),
                                     replica("tiny-0", "tiny", 0, 8082, memory=500)], ports=[8080]),
                "h2": reading(5500, [replica("tiny-1", "tiny", 1, 8080, memory=500)])}
    result, shares = shares_after([{"name": "tiny", "replicas": 2, "memory_mib": 500},
                                   {"name": "gemma", "replicas": 1, "memory_mib": 900}], readings)
    assert [note["id"] for note in result["notes"]] == ["placement.kept"]
    assert all(share == {**share, "remove": [], "changed": False} for share in shares.values())


def test_a_replica_that_does_not_run_its_plan_is_a_change():
    readings = {"h1": reading(7000, [replica("tiny-0", "tiny", 0, 8080, memory=500, current=False)])}
    _result, shares = shares_after([{"name": "tiny", "replicas": 1, "memory_mib": 500}], readings)
    assert shares["h1"]["changed"] is True
    assert shares["h1"]["remove"] == []


def test_a_lost_host_moves_its_replica_and_fewer_replicas_remove_one():
    # h3 is gone from the fleet (no reading): its tiny-1 is placed again, on h2.
    readings = {"h1": reading(7000, [replica("tiny-0", "tiny", 0, 8080, memory=500),
                                     replica("tiny-2", "tiny", 2, 8081, memory=500)]),
                "h2": reading(6000)}
    result, shares = shares_after([{"name": "tiny", "replicas": 2, "memory_mib": 500}], readings)
    assert {(p["replica"], p["host"]) for p in result["placements"]} == {(0, "h1"), (1, "h2")}
    assert shares["h1"]["remove"] == ["tiny-2"]
    assert shares["h1"]["changed"] is True
    assert [entry["name"] for entry in shares["h2"]["instances"]] == ["tiny-1"]


def test_cards_a_ram_replica_on_a_host_with_cards_sees_none():
    cards = [Card(uuid="GPU-1", index=0, total_mib=24000, free_mib=20000)]
    result, shares = shares_after([{"name": "g", "replicas": 1, "memory_mib": 4000, "gpus": 1},
                                   {"name": "c", "replicas": 1, "memory_mib": 400}],
                                  {"h1": reading(8000, gpus=cards)})
    assert result["unplaced"] == []
    assert {e["name"]: e["cuda_visible_devices"] for e in shares["h1"]["instances"]} == {"g-0": "GPU-1", "c-0": "-1"}
    assert glue.cards_of("-1") == []
    assert glue.cards_of("GPU-1, GPU-2") == ["GPU-1", "GPU-2"]


def test_placed_instances_carry_the_deployment_and_the_placement():
    share = [{"name": "tiny-1", "deployment": "tiny", "replica": 1, "port": 8081, "cuda_visible_devices": ""},
             {"name": "gone-0", "deployment": "gone", "replica": 0, "port": 8082, "cuda_visible_devices": ""}]
    instances = glue.placed_instances(share, [{"name": "tiny", "preset": "tiny", "replicas": 2, "api_key": KEY,
                                               "settings": {"host": "10.0.0.1"}, "environment": {}}])
    assert instances == [{"preset": "tiny", "settings": {"host": "10.0.0.1"}, "environment": {}, "api_key": KEY,
                          "name": "tiny-1",
                          "port": 8081, "placement": {"deployment": "tiny", "replica": 1}}]


@pytest.mark.parametrize(
    ("reports", "frozen", "expected"),
    [
        pytest.param({"h2": [{"instance": "tiny-1", "state": "deployed", "runs_plan": True}]}, [],
                     ["gone-0", "tiny-1"], id="moved-and-running-there"),
        pytest.param({"h2": [{"instance": "tiny-1", "state": "failed", "runs_plan": False}]}, [], ["gone-0"],
                     id="moved-but-failed-there-stays"),
        pytest.param({}, [], ["gone-0"], id="new-host-not-reached-stays"),
        pytest.param({}, ["h2"], ["gone-0", "tiny-1"], id="the-copy-on-a-frozen-host-runs-there"),
    ],
)
def test_removable_waits_for_the_new_home(reports, frozen, expected):
    result = {"placements": [{"deployment": "tiny", "replica": 1, "host": "h2"}], "frozen": frozen}
    assert glue.removable(["gone-0", "tiny-1"], result, reports) == expected
    # The host's share says the same with its own moves only (moved_to: what the removals play reads).
    share = {"remove": ["gone-0", "tiny-1"], "moved_to": {
        "tiny-1": {"host": "h2", "instance": "tiny-1", "frozen": frozen == ["h2"]}}}
    assert glue.removable(share["remove"], share, reports) == expected


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        pytest.param({"deployment": "t", "replica": 1, "host": "h2"},
                     {"t-1": {"host": "h2", "instance": "t-1", "frozen": False}}, id="first-name"),
        pytest.param({"deployment": "t", "replica": 1, "host": "h9", "instance": "t-1-b"},
                     {"t-1-b": {"host": "h9", "instance": "t-1-b", "frozen": True}}, id="frozen-host"),
        pytest.param({"deployment": "t", "replica": 1, "host": "h1", "instance": "t-1-b",
                      "renews": {"host": "h1", "instance": "t-1"}},
                     {"t-1": {"host": "h1", "instance": "t-1-b", "frozen": False}}, id="start-first-copy"),
    ],
)
def test_removal_homes_by_the_copy_replaced(placement, expected):
    assert glue.removal_homes({"placements": [placement], "frozen": ["h9"]}) == expected


def test_summary_rows_per_deployment():
    rows = glue.summary_rows({"placements": [{"deployment": "t", "replica": 0, "host": "h1", "gpus": [], "port": 8080,
                                              "memory_mib": 5},
                                             {"deployment": "t", "replica": 1, "host": "h2", "gpus": [], "port": 8081,
                                              "memory_mib": 5, "instance": "t-1-b"}],
                              "unplaced": [{"deployment": "big", "replica": 0, "why": "needs 9 MiB"}]})
    assert rows == [{"deployment": "big", "replicas": [], "unplaced": [{"replica": 0, "why": "needs 9 MiB"}],
                     "lost": []},
                    {"deployment": "t", "replicas": [{"replica": 0, "host": "h1", "instance": "t-0", "gpus": [],
                                                      "port": 8080, "memory_mib": 5},
                                                     {"replica": 1, "host": "h2", "instance": "t-1-b", "gpus": [],
                                                      "port": 8081, "memory_mib": 5}],
                     "unplaced": [], "lost": []}]


def test_a_replica_found_twice_stays_where_it_runs_its_plan_and_goes_elsewhere():
    # h2 left the fleet, its b-0 was placed again on h1, and h2 came back with its old copy still running.
    readings = {"h1": reading(7000, [replica("b-0", "b", 0, 8081, memory=500)]),
                "h2": reading(7000, [replica("b-0", "b", 0, 8080, memory=500, current=False)])}
    wanted, hosts, current, errors, notes = glue.placement_inputs([{"name": "b", "memory_mib": 500}], readings, {})
    assert errors == []
    assert [entry["host"] for entry in current] == ["h1"]
    assert notes == ["b-0 runs on h1 and on h2: it stays on h1, the others are removed"]
    shares = glue.host_changes(place(wanted, hosts, current), readings)
    assert shares["h1"] == {**shares["h1"], "remove": [], "changed": False}
    assert shares["h2"] == {"instances": [], "remove": ["b-0"],
                            "moved_to": {"b-0": {"host": "h1", "instance": "b-0", "frozen": False}}, "changed": True}


def test_the_ports_of_replicas_that_go_after_the_rollout_are_not_given_again():
    # On h1: "old-0" of a deployment no longer listed (port 8080) and a second copy of b-0 left by a surge cut short
    # (b-0-b on 8081, b-0 on 8082 runs its plan). Both run until the removals that follow the rollout, and the judge
    # leaves replicas' ports out of its listeners: the new deployment's replica must take neither port.
    readings = {"h1": reading(9000, [replica("old-0", "old", 0, 8080), replica("b-0-b", "b", 0, 8081, current=False),
                                     replica("b-0", "b", 0, 8082)], ports=(22,))}
    deployments = [{"name": "b", "memory_mib": 500}, {"name": "c", "memory_mib": 500}]
    wanted, hosts, current, errors, _notes = glue.placement_inputs(deployments, readings, {})
    assert errors == []
    assert hosts[0]["ports_used"] == [22, 8080, 8081, 8082]
    result = place(wanted, hosts, current)
    assert {(entry["deployment"], entry["port"]) for entry in result["placements"]} == {("b", 8082), ("c", 8083)}


# ------------------------------------------------------------------ a run that does not read the whole fleet
def _ledger_scope(run_hosts, readings, *, statuses=None, cordons=None, ledger=None, unreachable=REPLACE):
    inventory = ("h1", "h2", "h3")
    statuses = statuses if statuses is not None else dict.fromkeys(readings, "ok")
    return run_scope(inventory, run_hosts, readings, statuses=statuses, cordons=cordons or {},
                     ledger=ledger or Ledger(fleet="f"), unreachable=unreachable)


def _place(deployments, readings, scope):
    wanted, hosts, current, errors, notes = glue.placement_inputs(deployments, readings, {}, {}, scope)
    assert errors == []
    result = place(wanted, hosts, current)
    return result, notes


TWO = [{"name": "b", "replicas": 2, "memory_mib": 500}]


def test_a_frozen_host_keeps_its_replicas_and_takes_nothing_new():
    # --limit h1: h2 runs b-1 (the ledger says), h3 runs nothing; b-0 is new and goes to h1 only.
    ledger = Ledger(fleet="f", hosts={"h2": LedgerHost(placed=(replica("b-1", "b", 1, 8080, memory=500),)),
                                      "h3": LedgerHost()})
    readings = {"h1": reading(7000)}
    scope = _ledger_scope(("h1",), readings, ledger=ledger)
    result, notes = _place(TWO, readings, scope)
    assert notes == []
    assert [(p["replica"], p["host"]) for p in result["placements"]] == [(0, "h1"), (1, "h2")]
    assert result["unplaced"] == []
    shares = glue.host_changes(result, readings)
    assert set(shares) == {"h1"}  # a frozen host gets no share: nothing is done there


def test_no_room_inside_the_limit_is_left_out_not_sent_to_a_frozen_host():
    ledger = Ledger(fleet="f", hosts={"h2": LedgerHost(), "h3": LedgerHost()})
    readings = {"h1": reading(1600)}
    result, _notes = _place(TWO, readings, _ledger_scope(("h1",), readings, ledger=ledger))
    assert [(p["replica"], p["host"]) for p in result["placements"]] == [(0, "h1")]
    assert [entry["replica"] for entry in result["unplaced"]] == [1]
    assert result["unplaced"][0]["why"] == ("needs 500 MiB of RAM; spread: each of the 1 host(s) with its labels "
                                            "already runs one of its replicas (the best of them, h1, has 76 MiB of "
                                            "RAM free after its margin)")


def test_a_lost_hosts_replicas_are_placed_again_and_reported():
    ledger = Ledger(fleet="f", hosts={"h1": LedgerHost(placed=(replica("b-0", "b", 0, 8080, memory=500),)),
                                      "h2": LedgerHost(placed=(replica("b-1", "b", 1, 8080, memory=500),))})
    readings = {"h1": reading(7000, [replica("b-0", "b", 0, 8080, memory=500)]), "h3": reading(7000)}
    scope = _ledger_scope(("h1", "h2", "h3"), readings, ledger=ledger)
    assert scope.unreachable == ("h2",)
    result, _notes = _place(TWO, readings, scope)
    assert [(p["replica"], p["host"]) for p in result["placements"]] == [(0, "h1"), (1, "h3")]
    lost = glue.lost_replicas(scope, result)
    assert lost == [{"deployment": "b", "replica": 1, "host": "h2", "placed_on": "h3"}]
    rows = glue.summary_rows(result, lost)
    assert rows[0]["lost"] == [{"replica": 1, "host": "h2", "placed_on": "h3"}]


def test_a_lost_replica_with_no_room_is_short():
    ledger = Ledger(fleet="f", hosts={"h2": LedgerHost(placed=(replica("b-1", "b", 1, 8080, memory=500),))})
    readings = {"h1": reading(7000, [replica("b-0", "b", 0, 8080, memory=500)]), "h3": reading(900)}
    scope = _ledger_scope(("h1", "h2", "h3"), readings, ledger=ledger)
    result, _notes = _place(TWO, readings, scope)
    assert [entry["replica"] for entry in result["unplaced"]] == [1]
    assert glue.lost_replicas(scope, result) == [{"deployment": "b", "replica": 1, "host": "h2", "placed_on": ""}]


def test_keep_counts_the_unreachable_hosts_replicas_where_they_were():
    ledger = Ledger(fleet="f", hosts={"h2": LedgerHost(placed=(replica("b-1", "b", 1, 8080, memory=500),))})
    readings = {"h1": reading(7000, [replica("b-0", "b", 0, 8080, memory=500)]), "h3": reading(7000)}
    scope = _ledger_scope(("h1", "h2", "h3"), readings, ledger=ledger, unreachable=KEEP)
    result, _notes = _place(TWO, readings, scope)
    assert [(p["replica"], p["host"]) for p in result["placements"]] == [(0, "h1"), (1, "h2")]
    assert glue.lost_replicas(scope, result) == []


def test_a_host_back_from_an_outage_gives_up_its_stale_copy_and_nothing_moves_for_nothing():
    # h2 was down, b-1 was placed again on h3; h2 is back with its old copy (it runs its plan too).
    readings = {"h1": reading(7000, [replica("b-0", "b", 0, 8080, memory=500)]),
                "h2": reading(7000, [replica("b-1", "b", 1, 8080, memory=500)]),
                "h3": reading(7000, [replica("b-1", "b", 1, 8081, memory=500)])}
    scope = _ledger_scope(("h1", "h2", "h3"), readings)
    result, notes = _place(TWO, readings, scope)
    assert notes == ["b-1 runs on h2 and on h3: it stays on h2, the others are removed"]
    shares = glue.host_changes(result, readings)
    assert [share["remove"] for share in (shares["h1"], shares["h2"], shares["h3"])] == [[], [], ["b-1"]]
    assert not shares["h1"]["changed"]
    assert not shares["h2"]["changed"]
    assert len(result["placements"]) == 2  # never more than its replica count


def test_a_copy_on_a_frozen_host_wins_over_one_this_run_reads():
    ledger = Ledger(fleet="f", hosts={"h2": LedgerHost(placed=(replica("b-1", "b", 1, 8080, memory=500),))})
    readings = {"h1": reading(7000, [replica("b-0", "b", 0, 8080, memory=500), replica("b-1", "b", 1, 8081,
                                                                                       memory=500)])}
    scope = _ledger_scope(("h1", "h3"), {**readings, "h3": reading(7000)}, ledger=ledger)
    result, notes = _place(TWO, {**readings, "h3": reading(7000)}, scope)
    assert notes == ["b-1 runs on h2 and on h1: it stays on h2, the others are removed"]
    assert glue.host_changes(result, readings)["h1"]["remove"] == ["b-1"]


def test_a_cordoned_hosts_replicas_move_and_it_takes_nothing():
    readings = {"h1": reading(7000, [replica("b-0", "b", 0, 8080, memory=500)]),
                "h2": reading(7000, [replica("b-1", "b", 1, 8080, memory=500)]), "h3": reading(7000)}
    scope = _ledger_scope(("h1", "h2", "h3"), readings, cordons={"h2": True})
    result, _notes = _place(TWO, readings, scope)
    assert [(p["replica"], p["host"], p.get("moved_from")) for p in result["placements"]] == [
        (0, "h1", None), (1, "h3", "h2")]
    assert glue.host_changes(result, readings)["h2"] == {
        "instances": [], "remove": ["b-1"], "moved_to": {"b-1": {"host": "h3", "instance": "b-1", "frozen": False}},
        "changed": True}
    # Uncordoned, nothing moves back: b-1 stays on h3.
    moved = replica("b-1", "b", 1, 8080, memory=500)
    after = {"h1": readings["h1"], "h2": reading(7000), "h3": reading(7000, [moved])}
    again, _notes = _place(TWO, after, _ledger_scope(("h1", "h2", "h3"), after, cordons={"h2": False}))
    assert [(p["replica"], p["host"]) for p in again["placements"]] == [(0, "h1"), (1, "h3")]


def test_two_runs_over_disjoint_halves_end_as_one_run_over_the_fleet():
    deployments = [{"name": "b", "replicas": 3, "memory_mib": 500}]
    empty = {"h1": reading(7000), "h2": reading(7000), "h3": reading(7000)}
    whole, _notes = _place(deployments, empty, _ledger_scope(("h1", "h2", "h3"), empty))

    ledger = Ledger(fleet="f", hosts={name: LedgerHost() for name in ("h1", "h2", "h3")})
    first_read = {"h1": empty["h1"]}
    first, _notes = _place(deployments, first_read, _ledger_scope(("h1",), first_read, ledger=ledger))
    ran = {name: tuple(replica(p_name(p), p["deployment"], p["replica"], p["port"], memory=500)
                       for p in first["placements"] if p["host"] == name) for name in ("h1",)}
    ledger = updated(ledger, ("h1", "h2", "h3"), placed=ran)
    second_read = {"h2": empty["h2"], "h3": empty["h3"]}
    second, _notes = _place(deployments, second_read, _ledger_scope(("h2", "h3"), second_read, ledger=ledger))
    # The same fleet: every replica placed, one per host (replicas are numbered in the order the runs placed them).
    assert second["unplaced"] == []
    assert sorted(p["host"] for p in second["placements"]) == sorted(p["host"] for p in whole["placements"])
    assert sorted(p["replica"] for p in second["placements"]) == [0, 1, 2]


def p_name(entry):
    return glue.replica_name(entry["deployment"], entry["replica"])
