"""An instance's report row (report.py): what runs comes from the apply result, what was planned from the plan."""

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import early_entry, report_entry
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import Expectations
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Decisions, Plan

PLAN = Planned(
    Plan(argv=["/e/llama-server"], notes=[Note("a", ""), Note("b", "")],
         decisions=Decisions(host="0.0.0.0", port="8080", expect=Expectations(ctx=8192, ngl="auto", cache_ram="0"))),
    facts={"model": "/m/gemma.gguf", "gpus": [{}, {}], "vram_mib": 48000, "ram_mib": 64000},
)


def test_a_deployed_row_shows_what_runs():
    applied = {"state": "deployed", "changed": True, "restarted": True, "reasons": ["the unit file changed"],
               "pid": 42, "health": 200, "runs_plan": True, "props": {"n_ctx": 4096, "total_slots": 2,
                                                                      "build_info": "b11434-x"}}
    row = report_entry("main", PLAN, applied, "llama-server-main.service")
    assert row["ctx"] == "4096×2"
    assert row["planned_ctx"] == 8192
    assert (row["model"], row["gpus"], row["notes_count"], row["pid"], row["build"]) == ("gemma.gguf", 2, 2, 42,
                                                                                         "b11434-x")
    assert "error" not in row


def test_a_failed_row_shows_what_still_runs_and_why():
    applied = {"state": "failed", "changed": True, "restarted": True, "rolled_back": True, "error": "bad",
               "props": {"n_ctx": 2048, "total_slots": 1}, "health": 200}
    row = report_entry("main", PLAN, applied, "u")
    assert (row["state"], row["ctx"], row["error"], row["rolled_back"]) == ("failed", "2048", "bad", True)


def test_no_props_no_context():
    row = report_entry("main", PLAN, {"state": "previewed", "would_restart": True}, "u")
    assert (row["ctx"], row["would_restart"], row["restarted"]) == ("", True, False)
    assert report_entry("main", Planned(Plan(argv=[])), {}, "u")["state"] == "failed"


def test_early_rows():
    assert early_entry("a", "pending", "check mode", "u", changed=True) == {
        "instance": "a", "unit": "u", "state": "pending", "changed": True, "restarted": False, "error": "check mode"}
    assert "error" not in early_entry("a", "external")
