"""The fleet summary table of playbooks/deploy-llm.yml (filter fleet_summary_markdown / fleet_summary_rows)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.filter.fleet_summary import FilterModule
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_summary import (
    COLUMNS,
    KEYS,
    deployment_lines,
    fleet_summary_markdown,
    fleet_summary_rows,
)
from tests.unit.support.counting import CountingDict


def entry(instance="main", **overrides):
    values = {
        "instance": instance,
        "state": "deployed",
        "model": "gemma-3-270m-q4_k_m.gguf",
        "ctx": "4096",
        "ngl": "auto",
        "cache_ram": "1024",
        "gpus": 0,
        "vram_mib": 0,
        "ram_mib": 24000,
        "changed": False,
        "restarted": False,
        "pid": 123,
        "notes_count": 7,
        "health": 200,
    }
    values.update(overrides)
    return values


HOSTVARS = {
    "h1": {
        "llama_fleet_status": "ok",
        "llama_server_report": [entry(), entry("side", ctx="8192", changed=True, restarted=True)],
    },
    "h2": {
        "llama_fleet_status": "failed",
        "llama_server_report": [entry(state="failed", health=-1, error="new unit did not become healthy\nlog...")],
        "llama_server_failure": "new unit did not become healthy\njournal tail",
    },
    "h3": {"llama_fleet_status": "started"},  # unreachable: started, then lost
    "h4": {"llama_fleet_status": "ok", "llama_server_report": []},
    "h5": {"llama_fleet_status": "judged"},  # judged with work, then its batch never ran
}


def test_rows_cover_every_host_in_order():
    rows = fleet_summary_rows(["h1", "h2", "h3", "h4"], HOSTVARS)
    assert [(r["host"], r["instance"]) for r in rows] == [("h1", "main"), ("h1", "side"), ("h2", "main"),
                                                          ("h3", ""), ("h4", "")]
    assert all(set(r) == set(KEYS) for r in rows)


def test_failed_unreachable_and_not_reached_hosts_are_told_apart():
    rows = {(r["host"], r["instance"]): r for r in fleet_summary_rows(["h2", "h3", "h5", "missing"], HOSTVARS)}
    assert rows[("h2", "main")]["state"] == "failed"
    assert rows[("h2", "main")]["detail"] == "new unit did not become healthy"
    assert rows[("h3", "")]["state"] == "unreachable"
    assert rows[("h3", "")]["detail"] == "unreachable: the run lost this host"
    # Outside the batches that ran (the rollout stopped on the canary): not a failure of that host.
    assert rows[("h5", "")]["state"] == "not run"
    assert rows[("h5", "")]["detail"] == "not reached: the rollout stopped before its batch"
    # No status at all: the first play (the judge) lost it.
    assert rows[("missing", "")]["state"] == "unreachable"


def test_check_mode_rows_say_would_restart():
    hostvars = {"h": {"llama_fleet_status": "ok", "llama_server_report": [
        entry(state="previewed", changed=True, would_restart=True, reasons=["the unit file changed"])]}}
    (row,) = fleet_summary_rows(["h"], hostvars)
    assert row["restarted"] == "would"
    assert row["detail"] == "would restart: the unit file changed"
    text = fleet_summary_markdown(["h"], hostvars)
    assert "| yes | would |" in text
    assert text.splitlines()[-1] == "1 host(s), 1 row(s); 1 instance(s) changed, 0 restarted, 1 would restart; " \
        "failed hosts: none."


def test_instances_handled_before_a_host_failure_say_so():
    hostvars = {"h": {"llama_fleet_status": "failed", "llama_server_failure": "port 8080 is already in use",
                      "llama_server_report": [entry()]}}
    (row,) = fleet_summary_rows(["h"], hostvars)
    assert row["state"] == "deployed"
    assert row["detail"] == "host failed: port 8080 is already in use"


def test_host_without_instances():
    (row,) = fleet_summary_rows(["h4"], HOSTVARS)
    assert row["state"] == "no instances"
    assert row["detail"] == ""


def test_markdown_table():
    text = fleet_summary_markdown(["h1", "h2", "h3"], HOSTVARS, title="Test fleet")
    lines = text.splitlines()
    assert lines[0] == "# Test fleet"
    assert lines[2].startswith("| Host | Instance | State | Model | Ctx | GPU layers | Cache RAM (MiB) |")
    assert lines[3] == "|" + "|".join(["---"] * len(COLUMNS)) + "|"
    assert lines[4] == ("| h1 | main | deployed | gemma-3-270m-q4_k_m.gguf | 4096 | auto | 1024 | 0 | 0 | 24000 | no "
                        "| no | 7 | 200 | - |")
    assert "| h1 | side | deployed |" in lines[5]
    assert "| 8192 |" in lines[5]
    assert "| yes | yes |" in lines[5]
    assert lines[7].startswith("| h3 | - | unreachable |")
    assert lines[-1] == "3 host(s), 4 row(s); 1 instance(s) changed, 1 restarted; failed hosts: h2; unreachable: h3."
    assert text.endswith("\n")


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        pytest.param(None, "-", id="none"),
        pytest.param("", "-", id="empty"),
        pytest.param(True, "yes", id="true"),
        pytest.param(False, "no", id="false"),
        pytest.param(0, "0", id="zero-is-a-value"),
        pytest.param("a|b", "a\\|b", id="pipe-escaped"),
        pytest.param("two\nlines", "two lines", id="newline-joined"),
        pytest.param("x" * 200, "x" * 119 + "…", id="long-cut"),
    ],
)
def test_cells(value, cell):
    text = fleet_summary_markdown(["h"], {"h": {"llama_fleet_status": "ok",
                                                "llama_server_report": [entry(model=value)]}})
    row = text.splitlines()[4]
    assert row.split(" | ")[3] == cell


@pytest.mark.parametrize(
    ("hosts", "hostvars"),
    [
        pytest.param("h1", HOSTVARS, id="string-not-list"),
        pytest.param(5, HOSTVARS, id="not-iterable"),
        pytest.param(["h1"], ["h1"], id="hostvars-not-mapping"),
    ],
)
def test_bad_input(hosts, hostvars):
    with pytest.raises(AnsibleFilterError):
        fleet_summary_rows(hosts, hostvars)


def test_registered_names():
    assert set(FilterModule().filters()) == {"fleet_summary_markdown", "fleet_summary_rows"}


@pytest.mark.parametrize(
    ("entry", "detail"),
    [
        ({"restarted": True, "reasons": ["the unit file changed", "x"]}, "restarted: the unit file changed"),
        ({"restarted": False, "would_restart": True, "reasons": ["the unit hit its start limit (start-limit-hit)"]},
         "would restart: the unit hit its start limit (start-limit-hit)"),
        ({"restarted": False, "reasons": []}, ""),
        ({"restarted": True, "reasons": ["r"], "error": "boom\nmore"}, "boom"),
        ({"restarted": False, "changed": True, "reasons": [], "rewritten": ["the unit file"]},
         "rewritten, not restarted: the unit file (nothing that runs changed)"),
        ({"state": "deployed", "restarted": False, "changed": True, "reasons": [], "reloaded": ["code", "chat"]},
         "reloaded, not restarted: code, chat"),
        ({"state": "previewed", "restarted": False, "changed": True, "reasons": [], "reloaded": ["code"]},
         "would reload, not restarted: code"),
        ({"state": "stopped", "changed": True}, "stopped by this run; its files are kept"),
        ({"state": "stopped", "changed": False}, "stopped; its files are kept"),
        ({"state": "stopped", "error": "instance main: it could not be stopped: x"},
         "instance main: it could not be stopped: x"),
    ],
)
def test_the_detail_says_why_an_instance_was_restarted(entry, detail):
    rows = fleet_summary_rows(["h"], {"h": {"llama_fleet_status": "ok",
                                            "llama_server_report": [{"instance": "main", "state": "deployed",
                                                                     **entry}]}})
    assert rows[0]["detail"] == detail


# ------------------------------------------------------------------ a fleet that is not all there
def test_a_host_outside_the_run_is_not_in_this_run_never_failed():
    rows = fleet_summary_rows(["h1"], HOSTVARS, ["h1", "h9"])
    assert [(r["host"], r["state"], r["detail"]) for r in rows if r["host"] == "h9"] == [
        ("h9", "not in this run", "outside --limit or this slice: nothing changed there")]
    text = fleet_summary_markdown(["h1"], HOSTVARS, inventory_hosts=["h1", "h9"])
    assert text.splitlines()[-1] == ("2 host(s), 3 row(s); 1 instance(s) changed, 1 restarted; failed hosts: none; "
                                     "not in this run: h9.")


def test_the_host_totals_are_given_once_per_host_under_a_header_that_says_so():
    rows = fleet_summary_rows(["h1"], HOSTVARS)
    assert [(r["ram_mib"], r["vram_mib"]) for r in rows] == [(24000, 0), ("", "")]
    assert "| Host VRAM (MiB) | Host RAM (MiB) |" in fleet_summary_markdown(["h1"], HOSTVARS)


@pytest.mark.parametrize(("overrides", "detail"), [
    pytest.param({"restarted": True, "reasons": ["llama-server-main.service changed", "the unit is not loaded yet"],
                  "was_running": False}, "started: a new instance", id="first-deploy"),
    pytest.param({"would_restart": True, "reasons": ["compose.yaml changed", "the container does not exist yet"],
                  "was_running": False}, "would start: a new instance", id="first-deploy-check-mode"),
    pytest.param({"restarted": True, "reasons": ["the engine is not running (failed/failed)"], "was_running": False},
                 "started: the engine is not running (failed/failed)", id="it-was-down"),
    pytest.param({"restarted": True, "reasons": ["the running engine's environment is not the plan's: X"],
                  "was_running": False}, "started: it did not run before", id="no-reason-says-why"),
    pytest.param({"restarted": True, "reasons": ["the unit file changed"], "was_running": True},
                 "restarted: the unit file changed", id="a-real-restart"),
    pytest.param({"restarted": True, "reasons": ["the unit file changed"]},
                 "restarted: the unit file changed", id="an-older-report-without-the-field"),
])
def test_a_first_start_is_not_called_a_restart(overrides, detail):
    (row,) = fleet_summary_rows(["h"], {"h": {"llama_fleet_status": "ok", "llama_server_report": [
        entry(**overrides)]}})
    assert row["detail"] == detail


def test_the_totals_count_starts_apart_from_restarts():
    hostvars = {"h": {"llama_fleet_status": "ok", "llama_server_report": [
        entry("a", changed=True, restarted=True, reasons=["x"], was_running=False),
        entry("b", changed=True, restarted=True, reasons=["the unit file changed"], was_running=True)]}}
    rows = fleet_summary_rows(["h"], hostvars)
    assert [row["restarted"] for row in rows] == ["started", True]
    assert fleet_summary_markdown(["h"], hostvars).splitlines()[-1] == (
        "1 host(s), 2 row(s); 2 instance(s) changed, 1 started, 1 restarted; failed hosts: none.")
    preview = {"h": {"llama_fleet_status": "ok", "llama_server_report": [
        entry("a", changed=True, would_restart=True, reasons=["x"], was_running=False)]}}
    assert fleet_summary_rows(["h"], preview)[0]["restarted"] == "would start"
    assert "0 restarted, 1 would start;" in fleet_summary_markdown(["h"], preview)


SCOPE = {"read": ["h1", "h2"], "outside": [], "unreachable": ["h3"], "failed": [], "frozen": [],
         "cordoned": ["h2"], "cordoned_elsewhere": [], "moved_off": {"h2": ["tiny-1 to h1"]},
         "lost": [{"deployment": "tiny", "replica": 2, "host": "h3", "placed_on": "h1"},
                  {"deployment": "gemma", "replica": 0, "host": "h3", "placed_on": ""}],
         "short": [{"deployment": "gemma", "replica": 0, "why": "needs 826 MiB of RAM"}]}
DEPLOYMENTS = [
    {"deployment": "gemma", "replicas": [], "unplaced": [{"replica": 0, "why": "needs 826 MiB of RAM"}],
     "lost": [{"replica": 0, "host": "h3", "placed_on": ""}]},
    {"deployment": "tiny", "replicas": [{"replica": 1, "host": "h1", "gpus": [], "port": 8081, "memory_mib": 78},
                                        {"replica": 2, "host": "h1", "gpus": [], "port": 8082, "memory_mib": 78}],
     "unplaced": [], "lost": [{"replica": 2, "host": "h3", "placed_on": "h1"}]},
]


def test_the_summary_names_the_cordoned_and_unreachable_hosts_and_the_short_replicas():
    hostvars = {"h1": {"llama_fleet_status": "ok", "llama_server_report": [entry("tiny-1"), entry("tiny-2")]},
                "h2": {"llama_fleet_status": "ok", "llama_server_report": []}}
    lines = fleet_summary_markdown(["h1", "h2", "h3"], hostvars, deployments=DEPLOYMENTS, scope=SCOPE).splitlines()
    assert "cordoned: h2 (takes no replica); moved off: tiny-1 to h1" in lines
    assert "unreachable: h3; its replicas were placed again" in lines
    assert "| gemma | 0 | h3 (unreachable) | - | - | - | short: no room elsewhere |" in lines
    assert "| gemma | 0 | (short) | - | - | - | needs 826 MiB of RAM |" in lines
    assert "| tiny | 2 | h3 (unreachable) | - | - | - | placed again on h1 |" in lines
    assert "| tiny | 2 | h1 | RAM | 8082 | 78 | deployed |" in lines


def test_a_replica_on_a_host_outside_the_run_is_as_recorded():
    deployments = [{"deployment": "tiny", "replicas": [{"replica": 0, "host": "h9", "gpus": [], "port": 8081,
                                                        "memory_mib": 78}], "unplaced": [], "lost": []}]
    lines = fleet_summary_markdown(["h1"], HOSTVARS, deployments=deployments, inventory_hosts=["h1", "h9"],
                                   scope={"frozen": ["h9"], "outside": ["h9"]}).splitlines()
    assert "| tiny | 0 | h9 | RAM | 8081 | 78 | as recorded (host not in this run) |" in lines


def test_the_deployments_read_each_hosts_report_once_and_its_last_row_of_an_instance_speaks():
    report = [entry("tiny-1", state="failed"), entry("tiny-1"), entry("tiny-2", state="absent")]
    hostvars = CountingDict({"h1": {"llama_fleet_status": "ok", "llama_server_report": report}})
    lines = deployment_lines(DEPLOYMENTS, hostvars, SCOPE)
    assert "| tiny | 1 | h1 | RAM | 8081 | 78 | deployed |" in lines
    assert "| tiny | 2 | h1 | RAM | 8082 | 78 | absent |" in lines
    assert hostvars.read == ["h1"]


def test_a_start_first_copy_is_read_under_its_instance_name():
    # tiny-0 was renewed beside itself: the copy runs as tiny-0-b, the old tiny-0 was removed.
    deployments = [{"deployment": "tiny", "replicas": [{"replica": 0, "host": "h1", "instance": "tiny-0-b",
                                                        "gpus": [], "port": 8083, "memory_mib": 78}],
                    "unplaced": [], "lost": []}]
    hostvars = {"h1": {"llama_fleet_status": "ok",
                       "llama_server_report": [entry("tiny-0", state="absent"), entry("tiny-0-b")]}}
    assert "| tiny | 0 | h1 | RAM | 8083 | 78 | deployed |" in deployment_lines(deployments, hostvars, {})
