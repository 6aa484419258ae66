"""The ledger action: a run records what each host it read runs now, and a maintenance run its cordons; the other
hosts keep their entries, a foreign or damaged file is never written, check mode writes nothing, and nothing runs
on any host."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_ledger as action_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    HostReading,
    PlacedReplica,
)
from tests.unit.support import actions

OLD = PlacedReplica(instance="tiny-0", deployment="tiny", replica=0, port=8080, memory_mib=78, current=True)
NEW = PlacedReplica(instance="tiny-1", deployment="tiny", replica=1, port=8081, memory_mib=78, version="v2",
                    current=True)
INVENTORY = ["h1", "h2", "h3"]


def judged(status, placed=()):
    reading = HostReading(capacity=HostCapacity(ram_free_mib=8000), placed=tuple(placed))
    return {"llama_fleet_status": status, "_llama_server_judgement": {"placement": reading.as_dict()}}


def run(tmp_path, hostvars=None, check_mode=False, **args):
    path = tmp_path / "fleet-ledger.json"
    result, calls = actions.run_action(action_module, {"path": str(path), "fleet_name": "llama_fleet",
                                                       "inventory_hosts": INVENTORY, **args},
                                       task_vars={"hostvars": hostvars or {}}, check_mode=check_mode)
    assert calls == []
    return result, path


def test_a_finished_host_records_its_share_and_an_unfinished_one_what_its_judge_found(tmp_path):
    hostvars = {"h1": judged("ok", [OLD]), "h2": judged("judged", [OLD])}
    result, path = run(tmp_path, hostvars, placed={"h1": [NEW.as_dict()], "h2": [NEW.as_dict()]})
    assert result["changed"] is True
    assert result["hosts"] == ["h1", "h2"]
    hosts = json.loads(path.read_text())["hosts"]
    assert [entry["instance"] for entry in hosts["h1"]["placed"]] == ["tiny-1"]
    assert [entry["instance"] for entry in hosts["h2"]["placed"]] == ["tiny-0"]  # its rollout did not run
    assert "h3" not in hosts
    # The same run again writes nothing.
    again, _path = run(tmp_path, hostvars, placed={"h1": [NEW.as_dict()], "h2": [NEW.as_dict()]})
    assert again["changed"] is False


def test_a_later_run_over_other_hosts_keeps_the_first_runs_entries(tmp_path):
    run(tmp_path, {"h1": judged("ok")}, placed={"h1": [NEW.as_dict()]})
    _result, path = run(tmp_path, {"h2": judged("ok")}, placed={"h2": [OLD.as_dict()]})
    hosts = json.loads(path.read_text())["hosts"]
    assert sorted(hosts) == ["h1", "h2"]
    assert hosts["h1"]["placed"][0]["instance"] == "tiny-1"


def test_cordon_and_uncordon_are_recorded(tmp_path):
    result, path = run(tmp_path, cordon=["h2", "h3"])
    assert result["cordoned"] == ["h2", "h3"]
    result, path = run(tmp_path, uncordon=["h3"])
    assert result["cordoned"] == ["h2"]
    assert json.loads(path.read_text())["hosts"]["h3"]["cordoned"] is False


@pytest.mark.parametrize(("args", "says"), [
    ({"cordon": ["h7"]}, "llama_fleet_cordon/llama_fleet_uncordon: h7 is not a host of the fleet (3 host(s))"),
    ({"cordon": ["h1"], "uncordon": ["h1"]}, "h1: both cordoned and uncordoned"),
])
def test_a_wrong_maintenance_request_changes_nothing(tmp_path, args, says):
    result, path = run(tmp_path, **args)
    assert result["failed"] is True
    assert says in result["msg"]
    assert not path.exists()


def test_check_mode_says_what_would_change_and_writes_nothing(tmp_path):
    result, _path = run(tmp_path, {"h1": judged("ok")}, check_mode=True, placed={"h1": [NEW.as_dict()]})
    assert result["changed"] is True
    assert list(tmp_path.iterdir()) == []  # not the ledger, not its lock


def test_a_foreign_ledger_is_never_overwritten(tmp_path):
    path = tmp_path / "fleet-ledger.json"
    path.write_text('{"kind": "llamafleet placement ledger", "version": 1, "fleet": "other", "hosts": {}}')
    result, _path = run(tmp_path, {"h1": judged("ok")}, placed={"h1": [NEW.as_dict()]})
    assert result["failed"] is True
    assert "it is the ledger of the fleet 'other'" in result["msg"]
    assert json.loads(path.read_text())["fleet"] == "other"


def test_a_refused_run_records_nothing_and_a_run_with_nothing_to_record_reads_no_file(tmp_path):
    result, path = run(tmp_path, {"h1": judged("ok")}, placed={"h1": [NEW.as_dict()]}, cordon=["h1"], refused=True)
    assert result["changed"] is False
    assert not path.exists()
    path.write_text("not a ledger, and not read")
    result, _path = run(tmp_path)
    assert result == {**result, "changed": False, "msg": "nothing to record (no placement, no cordon)"}
    assert path.read_text() == "not a ledger, and not read"
