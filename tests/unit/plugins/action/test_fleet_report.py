"""The report action: one task writes what the summary, ledger and targets actions write on their own (their code),
each part whatever the others did, and a failed part fails the task naming it."""

import json
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.action import (
    fleet_ledger,
    fleet_metrics_targets,
    fleet_report,
    fleet_summary,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import PlacedReplica
from tests.unit.support import actions

ROW = {"instance": "main", "state": "deployed", "host": "0.0.0.0", "port": "8080", "slots": 1,
       "model_name": "qwen3-8b", "runs_plan": True, "metrics": True}
REPLICA = PlacedReplica(instance="tiny-0", deployment="tiny", replica=0, port=8081, memory_mib=78, current=True)
HOSTVARS = {
    "gpu1": {"ansible_host": "10.0.0.11", "llama_server_report": [ROW], "llama_fleet_status": "ok",
             "llama_server_presets": {"qwen": {"MODEL": "qwen3-8b.gguf", "CTX": 4096}},
             "llama_server_instances": [{"name": "main", "preset": "qwen", "port": 8080, "api_key": "k" * 16}]},
    "gpu2": {"llama_server_instances": []},  # no report: outside this run
    "gw": {"llama_gateway_metrics_url": "http://10.0.0.5:8405/metrics", "llama_gateway_url": "http://10.0.0.5:8000"},
}


def paths(tmp_path) -> dict:
    return {"summary_path": str(tmp_path / "summary.md"), "ledger_path": str(tmp_path / "ledger.json"),
            "metrics_targets_path": str(tmp_path / "targets.json")}


def report(tmp_path, check_mode=False, **args):
    given = {"hosts": ["gpu1", "gpu2"], "inventory_hosts": ["gpu1", "gpu2"], "gateway_hosts": ["gw"],
             "placed": {"gpu1": [REPLICA.as_dict()]}, **paths(tmp_path), **args}
    result, calls = actions.run_action(fleet_report, given, task_vars={"hostvars": HOSTVARS}, check_mode=check_mode)
    assert calls == []  # nothing runs on a host
    return result


def alone(tmp_path) -> dict:
    """What the three actions write on their own, with the same arguments, in another directory."""
    tmp_path.mkdir()
    given = paths(tmp_path)
    task_vars = {"hostvars": HOSTVARS}
    summary = actions.run_action(fleet_summary, {"hosts": ["gpu1", "gpu2"], "path": given["summary_path"],
                                                 "gateway_hosts": ["gw"], "inventory_hosts": ["gpu1", "gpu2"]},
                                 task_vars=task_vars)[0]
    actions.run_action(fleet_ledger, {"path": given["ledger_path"], "inventory_hosts": ["gpu1", "gpu2"],
                                      "placed": {"gpu1": [REPLICA.as_dict()]}}, task_vars=task_vars)
    actions.run_action(fleet_metrics_targets, {"hosts": ["gpu1", "gpu2"], "inventory_hosts": ["gpu1", "gpu2"],
                                               "gateways": ["gw"], "path": given["metrics_targets_path"]},
                       task_vars=task_vars)
    return {"msg": summary["msg"], **{name: Path(path).read_text(encoding="utf-8") for name, path in given.items()}}


def test_writes_what_the_three_actions_write_then_changes_nothing(tmp_path):
    (tmp_path / "one").mkdir()
    result = report(tmp_path / "one")
    expected = alone(tmp_path / "three")
    assert result["msg"] == expected["msg"]
    assert result["_ansible_verbose_always"] is True  # the summary is shown without -v
    for name, path in paths(tmp_path / "one").items():
        assert Path(path).read_text(encoding="utf-8") == expected[name], name
    assert "k" * 16 not in json.dumps(result)
    assert (result["changed"], result["ledger"]["changed"], result["metrics_targets"]["changed"]) == (
        True, True, True)
    assert json.loads((tmp_path / "one" / "ledger.json").read_text())["hosts"]["gpu1"]["placed"][0][
        "instance"] == "tiny-0"
    again = report(tmp_path / "one")
    assert (again["changed"], again["ledger"]["changed"], again["metrics_targets"]["changed"]) == (
        False, False, False)


def test_without_a_targets_path_writes_no_targets(tmp_path):
    result = report(tmp_path, metrics_targets_path=None)
    assert "metrics_targets" not in result
    assert not (tmp_path / "targets.json").exists()
    assert (tmp_path / "summary.md").exists()


def test_a_refused_run_records_nothing_in_the_ledger(tmp_path):
    result = report(tmp_path, refused=True)
    assert result["ledger"]["msg"] == "the run was refused: the ledger is left as it was"
    assert not (tmp_path / "ledger.json").exists()
    assert (tmp_path / "summary.md").exists()


def test_check_mode_writes_the_summary_only_and_says_what_would_change(tmp_path):
    result = report(tmp_path, check_mode=True)
    assert (result["ledger"]["changed"], result["metrics_targets"]["changed"]) == (True, True)
    assert not (tmp_path / "ledger.json").exists()
    assert not (tmp_path / "targets.json").exists()
    assert (tmp_path / "summary.md").exists()  # a report of the run, as the summary action writes it


@pytest.mark.parametrize(("part", "says"), [
    ("metrics_targets", "metrics_targets: "), ("ledger", "ledger: "),
    ("summary", "summary: cannot write the fleet summary to "),
])
def test_a_failed_part_fails_the_task_naming_it_and_the_others_still_run(tmp_path, part, says):
    if part == "metrics_targets":
        (tmp_path / "targets.json").write_text('[{"targets": ["node:9100"], "labels": {"job": "node"}}]\n')
    elif part == "ledger":
        (tmp_path / "ledger.json").write_text("not a ledger")
    result = report(tmp_path, **({"summary_path": str(tmp_path / "missing" / "summary.md")}
                                 if part == "summary" else {}))
    assert result["failed"] is True
    assert result["msg"].startswith(says)
    if part != "summary":
        assert (tmp_path / "summary.md").exists()
        assert result["summary"][0].startswith("#")
    if part != "ledger":
        assert json.loads((tmp_path / "ledger.json").read_text())["hosts"]["gpu1"]
    if part != "metrics_targets":
        assert json.loads((tmp_path / "targets.json").read_text())[0]["labels"]["host"] == "gpu1"
