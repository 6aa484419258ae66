"""The deploy playbook's placement action: the judges' readings in, the placement and each host's share out; a
replica with no room, a need no host could plan and a --limit are refused (refused: true, the playbook fails every
host), and nothing runs on any host."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_deployments as action_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import (
    Ledger,
    LedgerHost,
    ledger_text,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    HostReading,
    Need,
    PlacedReplica,
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


def run_action(hostvars, deployments=None, hosts=("h1", "h2"), fleet=None, check_mode=False, **more):
    args = {"deployments": deployments or DEPLOYMENTS, "hosts": list(hosts), "fleet": fleet,
            "ledger_path": "/nonexistent-dir/fleet-ledger.json", "fleet_name": "llama_fleet", **more}
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


def test_a_limit_over_hosts_the_ledger_never_saw_is_refused():
    result = run_action({"h1": judged(8000, NEEDS)}, hosts=["h1"], fleet=["h1", "h2", "h3"])
    assert result["refused"] is True
    assert result["msg"].startswith("llama_fleet_deployments: the placement ledger /nonexistent-dir/fleet-ledger.json "
                                    "has no record of h2, h3, which this run leaves out (--limit, or another slice)")
    assert result["msg"].endswith("(nothing was changed)")


def _ledger(tmp_path, hosts, fleet="llama_fleet"):
    path = tmp_path / "ledger.json"
    path.write_text(ledger_text(Ledger(fleet=fleet, hosts=hosts)))
    return str(path)


def test_a_limit_counts_the_other_hosts_as_the_ledger_has_them(tmp_path):
    path = _ledger(tmp_path, {"h2": LedgerHost(placed=(PlacedReplica(
        instance="tiny-1", deployment="tiny", replica=1, port=8080, memory_mib=78),))})
    before = (tmp_path / "ledger.json").read_bytes()
    result = run_action({"h1": judged(8000, NEEDS), "h2": {}}, hosts=["h1"], fleet=["h1", "h2"], ledger_path=path)
    assert result["refused"] is False
    assert [(p["deployment"], p["replica"], p["host"]) for p in result["placement"]["placements"]] == [
        ("gemma", 0, "h1"), ("tiny", 0, "h1"), ("tiny", 1, "h2")]
    assert set(result["hosts"]) == {"h1"}
    assert result["scope"]["outside"] == ["h2"]
    assert result["placement"]["frozen"] == ["h2"]
    assert [entry["instance"] for entry in result["ledger"]["h1"]] == ["gemma-0", "tiny-0"]
    assert (tmp_path / "ledger.json").read_bytes() == before  # placing writes nothing


def test_a_lost_host_replicas_are_placed_again_and_no_room_is_short_not_refused(tmp_path):
    tiny_1 = PlacedReplica(instance="tiny-1", deployment="tiny", replica=1, port=8080, memory_mib=78)
    path = _ledger(tmp_path, {"h2": LedgerHost(placed=(tiny_1,))})
    # h2 is in the run and its judge lost it (no reading, no status); h1 has room for one tiny only (spread).
    result = run_action({"h1": judged(8000, NEEDS), "h2": {}}, hosts=["h1"], fleet=["h1", "h2"],
                        run_hosts=["h1", "h2"], ledger_path=path)
    assert result["refused"] is False
    assert "failed" not in result
    assert result["scope"]["unreachable"] == ["h2"]
    assert result["scope"]["lost"] == [{"deployment": "tiny", "replica": 1, "host": "h2", "placed_on": ""}]
    assert [entry["replica"] for entry in result["scope"]["short"]] == [1]
    tiny = next(row for row in result["deployments"] if row["deployment"] == "tiny")
    assert tiny["lost"] == [{"replica": 1, "host": "h2", "placed_on": ""}]


def test_keep_leaves_a_lost_hosts_replicas_where_they_were(tmp_path):
    tiny_1 = PlacedReplica(instance="tiny-1", deployment="tiny", replica=1, port=8080, memory_mib=78)
    path = _ledger(tmp_path, {"h2": LedgerHost(placed=(tiny_1,))})
    result = run_action({"h1": judged(8000, NEEDS), "h2": {}}, hosts=["h1"], fleet=["h1", "h2"],
                        run_hosts=["h1", "h2"], ledger_path=path, unreachable="keep")
    assert result["refused"] is False
    assert ("tiny", 1, "h2") in [(p["deployment"], p["replica"], p["host"]) for p in result["placement"]["placements"]]
    assert result["scope"]["lost"] == []
    assert result["scope"]["short"] == []


def test_a_cordon_with_no_room_elsewhere_is_refused_naming_the_deployment():
    placed = [PlacedReplica(instance="gemma-0", deployment="gemma", replica=0, port=8081, memory_mib=826,
                            current=True)]
    result = run_action({"h1": judged(8000, NEEDS, placed, llama_fleet_cordoned=True), "h2": judged(1500, NEEDS)},
                        deployments=[{"name": "gemma", "preset": "gemma", "replicas": 1}])
    assert result["refused"] is True
    assert result["msg"].startswith("deployment gemma replica 0: it runs on h1, which is cordoned, and no other host "
                                    "can take it: needs 826 MiB of RAM")
    assert "the best candidate, h2, has" in result["msg"]


def test_a_cordoned_hosts_replica_moves_and_the_summary_says_so():
    placed = [PlacedReplica(instance="gemma-0", deployment="gemma", replica=0, port=8081, memory_mib=826,
                            current=True)]
    result = run_action({"h1": judged(8000, NEEDS, placed, llama_fleet_cordoned="yes"), "h2": judged(8000, NEEDS)},
                        deployments=[{"name": "gemma", "preset": "gemma", "replicas": 1}])
    assert result["refused"] is False
    assert result["scope"]["cordoned"] == ["h1"]
    assert result["scope"]["moved_off"] == {"h1": ["gemma-0 to h2"]}
    assert result["hosts"]["h1"]["remove"] == ["gemma-0"]


@pytest.mark.parametrize(("variables", "says"), [
    ({"llama_fleet_cordoned": "maybe"}, "h1: llama_fleet_cordoned: 'maybe' is not a boolean (true or false)"),
])
def test_a_bad_cordon_is_refused_naming_the_host_and_the_variable(variables, says):
    result = run_action({"h1": judged(8000, NEEDS, **variables), "h2": judged(8000, NEEDS)})
    assert result["refused"] is True
    assert says in result["msg"]


def test_an_unknown_unreachable_policy_is_refused():
    result = run_action({"h1": judged(8000, NEEDS), "h2": judged(8000, NEEDS)}, unreachable="retry")
    assert result["refused"] is True
    assert result["msg"].startswith("llama_fleet_unreachable: 'retry' is not one of replace, keep")


@pytest.mark.parametrize(("text", "says"), [
    ("{broken", "it is not JSON"),
    ('{"kind": "llamafleet placement ledger", "version": 1, "fleet": "other", "hosts": {}}',
     "it is the ledger of the fleet 'other', and this run deploys 'llama_fleet'"),
])
def test_a_damaged_or_foreign_ledger_is_refused_and_left_as_it_is(tmp_path, text, says):
    path = tmp_path / "ledger.json"
    path.write_text(text)
    result = run_action({"h1": judged(8000, NEEDS), "h2": judged(8000, NEEDS)}, ledger_path=str(path))
    assert result["refused"] is True
    assert says in result["msg"]
    assert "never overwritten" in result["msg"]
    assert path.read_text() == text


def test_a_host_without_readings_is_left_out():
    result = run_action({"h1": judged(8000, NEEDS), "h2": {}}, deployments=[{"name": "gemma", "replicas": 1}])
    assert result["refused"] is False
    assert set(result["hosts"]) == {"h1"}


PRESETS = {"tiny": {"model": "tiny.gguf", "ctx": 2048}, "gemma": {"model": "gemma.gguf"}}


def test_each_hosts_variables_and_the_deployments_versions_reach_the_placement(monkeypatch):
    given, place = {}, action_module.place

    def spy(wanted, hosts, current, **more):
        given.update(wanted=wanted, hosts=hosts, **more)
        return place(wanted, hosts, current, **more)

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
