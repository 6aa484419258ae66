"""The fleet summary table of playbooks/deploy-llm.yml (filter fleet_summary_markdown / fleet_summary_rows)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.filter.fleet_summary import (
    COLUMNS,
    KEYS,
    FilterModule,
    fleet_summary_markdown,
    fleet_summary_rows,
)


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
    "h3": {},  # unreachable: the play never set anything there
    "h4": {"llama_fleet_status": "ok", "llama_server_report": []},
}


def test_rows_cover_every_host_in_order():
    rows = fleet_summary_rows(["h1", "h2", "h3", "h4"], HOSTVARS)
    assert [(r["host"], r["instance"]) for r in rows] == [("h1", "main"), ("h1", "side"), ("h2", "main"),
                                                          ("h3", ""), ("h4", "")]
    assert all(set(r) == set(KEYS) for r in rows)


def test_failed_and_unreachable_hosts_are_failed_rows():
    rows = {(r["host"], r["instance"]): r for r in fleet_summary_rows(["h2", "h3", "missing"], HOSTVARS)}
    assert rows[("h2", "main")]["state"] == "failed"
    assert rows[("h2", "main")]["detail"] == "new unit did not become healthy"
    assert rows[("h3", "")]["state"] == "failed"
    assert rows[("h3", "")]["detail"] == "unreachable or not run"
    assert rows[("missing", "")]["state"] == "failed"


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
    assert lines[7].startswith("| h3 | - | failed |")
    assert lines[-1] == "3 host(s), 4 row(s); 1 instance(s) changed, 1 restarted; failed hosts: h2, h3."
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
