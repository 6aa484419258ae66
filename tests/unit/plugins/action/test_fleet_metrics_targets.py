"""The targets action: reads the hosts' variables, writes only a change, never in check mode, never over a file
that is not its own."""

import json

from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_metrics_targets as action_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import preset_version
from tests.unit.support import actions

PRESETS = {"qwen": {"MODEL": "qwen3-8b.gguf", "CTX": 4096}}
ROW = {"instance": "main", "state": "deployed", "host": "0.0.0.0", "port": "8080", "slots": 1,
       "model_name": "qwen3-8b", "runs_plan": True, "metrics": True}
HOSTVARS = {
    "gpu1": {"ansible_host": "10.0.0.11", "llama_server_report": [ROW], "llama_server_presets": PRESETS,
             "llama_server_instances": [{"name": "main", "preset": "qwen", "port": 8080, "api_key": "k" * 16}]},
    "gpu2": {"llama_server_instances": []},  # no report: outside this run
    "gw": {"llama_gateway_metrics_url": "http://10.0.0.5:8405/metrics"},
}


def run_action(check_mode=False, **args):
    return actions.run_action(action_module, args, task_vars={"hostvars": HOSTVARS}, check_mode=check_mode)[0]


def test_writes_the_targets_once_then_changes_nothing(tmp_path):
    path = tmp_path / "targets.json"
    result = run_action(hosts=["gpu1", "gpu2"], gateways=["gw"], path=str(path))
    assert result["changed"] is True
    groups = json.loads(path.read_text())
    assert groups == result["targets"]
    assert groups[0] == {"targets": ["10.0.0.11:8080"], "labels": {
        "llamafleet": "engine", "host": "gpu1", "instance": "main", "model": "qwen3-8b", "preset": "qwen",
        "preset_version": preset_version({"MODEL": "qwen3-8b.gguf", "CTX": 4096})}}
    assert groups[1]["labels"] == {"llamafleet": "gateway", "host": "gw"}
    assert "k" * 16 not in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    before = path.stat().st_mtime_ns
    again = run_action(hosts=["gpu1", "gpu2"], gateways=["gw"], path=str(path))
    assert again["changed"] is False
    assert path.stat().st_mtime_ns == before


def test_check_mode_says_a_change_and_writes_nothing(tmp_path):
    path = tmp_path / "targets.json"
    result = run_action(check_mode=True, hosts=["gpu1"], path=str(path))
    assert result["changed"] is True
    assert not path.exists()


def test_a_foreign_file_is_left_as_it_is_even_when_only_validated(tmp_path):
    path = tmp_path / "targets.json"
    foreign = '[{"targets": ["node:9100"], "labels": {"job": "node"}}]\n'
    path.write_text(foreign)
    for validate_only in (True, False):
        result = run_action(hosts=["gpu1"], path=str(path), validate_only=validate_only)
        assert result["failed"] is True
        assert "was not written by this collection" in result["msg"]
        assert path.read_text() == foreign


def test_validate_only_passes_for_no_file_and_writes_nothing(tmp_path):
    path = tmp_path / "targets.json"
    result = run_action(hosts=["gpu1"], path=str(path), validate_only=True)
    assert (result["changed"], result["path"], result.get("failed", False)) == (False, str(path), False)
    assert "targets" not in result
    assert not path.exists()


def test_a_host_outside_the_run_keeps_its_targets_and_one_out_of_the_inventory_loses_them(tmp_path):
    path = tmp_path / "targets.json"
    path.write_text(json.dumps([
        {"targets": ["10.0.0.12:8080"], "labels": {"llamafleet": "engine", "host": "gpu2", "instance": "main"}},
        {"targets": ["10.0.0.99:8080"], "labels": {"llamafleet": "engine", "host": "old", "instance": "main"}},
    ]))
    result = run_action(hosts=["gpu1"], inventory_hosts=["gpu1", "gpu2"], path=str(path))
    assert [group["labels"]["host"] for group in result["targets"]] == ["gpu1", "gpu2"]
    assert result["kept"] == ["gpu2"]


def test_a_replica_the_host_was_to_remove_keeps_its_target_until_a_row_names_it(tmp_path):
    # The host's share (_llama_fleet_removals) names the old copy "main-b"; the rollout stopped before removing it.
    path = tmp_path / "targets.json"
    old = {"targets": ["10.0.0.11:8081"], "labels": {"llamafleet": "engine", "host": "gpu1", "instance": "main-b"}}
    stale = {"targets": ["10.0.0.11:8082"], "labels": {"llamafleet": "engine", "host": "gpu1", "instance": "gone"}}
    path.write_text(json.dumps([old, stale]))
    hostvars = {**HOSTVARS, "gpu1": {**HOSTVARS["gpu1"], "_llama_fleet_removals": ["main-b"]}}
    result = actions.run_action(action_module, {"hosts": ["gpu1"], "path": str(path)},
                                task_vars={"hostvars": hostvars})[0]
    assert [group["labels"]["instance"] for group in result["targets"]] == ["main", "main-b"]


def test_an_unwritable_path_fails_naming_it(tmp_path):
    result = run_action(hosts=["gpu1"], path=str(tmp_path / "no" / "dir" / "t.json"))
    assert result["failed"] is True
    assert "cannot write the scrape targets to" in result["msg"]
