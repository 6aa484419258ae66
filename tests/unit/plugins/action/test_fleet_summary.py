"""The summary action writes the table on the controller, only when it differs, and reports no change."""

from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_summary as action_module
from tests.unit.support import actions

HOSTVARS = {
    "h1": {"llama_fleet_status": "ok", "llama_server_report": [{"instance": "main", "state": "deployed",
                                                                "ctx": "4096", "health": 200}]},
    "h2": {"llama_fleet_status": "judged"},
}


def run_action(**args):
    return actions.run_action(action_module, args, task_vars={"hostvars": HOSTVARS}, check_mode=True)[0]


def test_writes_the_table_once_and_changes_nothing(tmp_path):
    path = tmp_path / "summary.md"
    result = run_action(hosts=["h1", "h2"], path=str(path))
    assert result["changed"] is False
    text = path.read_text()
    assert "| h1 | main | deployed |" in text
    assert "| h2 | - | not run |" in text  # judged, its batch never started
    assert result["msg"] == text.splitlines()
    assert result["_ansible_verbose_always"] is True  # printed without -v
    before = path.stat().st_mtime_ns
    run_action(hosts=["h1", "h2"], path=str(path))
    assert path.stat().st_mtime_ns == before


def test_an_unwritable_path_fails_naming_it(tmp_path):
    result = run_action(hosts=["h1"], path=str(tmp_path / "no" / "dir" / "s.md"))
    assert result["failed"] is True
    assert "cannot write the fleet summary to" in result["msg"]


def test_the_deployments_follow_the_table_with_each_replicas_state(tmp_path):
    hostvars = {**HOSTVARS, "h2": {"llama_fleet_status": "ok", "llama_server_report": [
        {"instance": "tiny-1", "state": "failed", "health": 503}]}}
    deployments = [{"deployment": "tiny", "replicas": [
        {"replica": 0, "host": "h1", "gpus": [], "port": 8081, "memory_mib": 78},
        {"replica": 1, "host": "h2", "gpus": ["GPU-a"], "port": 8080, "memory_mib": 78}],
        "unplaced": [{"replica": 2, "why": "needs 78 MiB of RAM; spread: each of the 2 host(s) already runs one"}]}]
    result = actions.run_action(action_module, {"hosts": ["h1", "h2"], "path": str(tmp_path / "s.md"),
                                                "deployments": deployments},
                                task_vars={"hostvars": hostvars}, check_mode=True)[0]
    lines = result["msg"]
    start = lines.index("## Deployments")
    assert lines[start + 4:] == [
        "| tiny | 0 | h1 | RAM | 8081 | 78 | not deployed |",  # h1 runs main only
        "| tiny | 1 | h2 | GPU-a | 8080 | 78 | failed |",
        "| tiny | 2 | (unplaced) | - | - | - | needs 78 MiB of RAM; spread: each of the 2 host(s) already runs one |"]
    assert "## Deployments" not in run_action(hosts=["h1"], path="")["msg"]
