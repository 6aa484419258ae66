"""One instance's row of the host report, from the plan and from what the apply step observed.

Pure. What runs comes from the apply result (the engine's /props, its PID, /health); the plan only says what
was planned. A failed instance therefore shows what still runs there, not the plan it was refused.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned

# What the report keeps of a plan (the rest stays on the host).
PLAN_REPORT_KEYS = ("argv", "exec_start", "env", "notes", "plan_warnings", "decisions", "facts", "preflight",
                    "unset_environment")


def _observed_ctx(props: Mapping) -> str:
    n_ctx = props.get("n_ctx")
    slots = props.get("total_slots")
    if not isinstance(n_ctx, int):
        return ""
    return f"{n_ctx}" if not isinstance(slots, int) or slots <= 1 else f"{n_ctx}×{slots}"


def _served_model(props: Mapping) -> str:
    """The name the engine lists in /v1/models, and a gateway routes by: its --alias, else its model's path (older
    engines say no model_alias in /props; their /v1/models lists the path)."""
    return str(props.get("model_alias") or props.get("model_path") or "")


def plan_part(name: str, planned: Planned, unit: str) -> dict:
    """What the plan says, for the report."""
    facts = planned.facts
    decisions = planned.plan.decisions
    expect = decisions.expect
    return {
        "instance": name,
        "unit": unit,
        "model": posixpath.basename(str(facts.get("model") or "")),
        "planned_ctx": expect.ctx or "",
        "ngl": expect.ngl or "",
        "cache_ram": expect.cache_ram or "",
        "gpus": len(facts.get("gpus") or []),
        "vram_mib": int(facts.get("vram_mib") or 0),
        "ram_mib": int(facts.get("ram_mib") or 0),
        "notes_count": len(planned.plan.notes),
        "metrics": decisions.metrics,
        "host": decisions.host,
        "port": decisions.port,
    }


def report_entry(name: str, planned: Planned, applied: Mapping, unit: str) -> dict:
    """The row: the plan's part, then what runs (context from /props), what was done and why."""
    entry = plan_part(name, planned, unit)
    props = applied.get("props") or {}
    entry.update(
        state=str(applied.get("state") or "failed"),
        ctx=_observed_ctx(props),
        slots=props["total_slots"] if isinstance(props.get("total_slots"), int) else 0,
        model_name=_served_model(props),
        changed=bool(applied.get("changed")),
        restarted=bool(applied.get("restarted")),
        would_restart=bool(applied.get("would_restart")),
        reasons=list(applied.get("reasons") or []),
        pid=int(applied.get("pid") or 0),
        health=applied.get("health", ""),
        runs_plan=bool(applied.get("runs_plan")),
        build=str(props.get("build_info") or ""),
        rolled_back=bool(applied.get("rolled_back")),
        rewritten=list(applied.get("rewritten") or []),
        was_running=bool(applied.get("was_running", True)),
    )
    if "router_models" in applied:
        # A router instance: its models as /v1/models lists them, and those this step reloaded.
        entry.update(router_models=list(applied.get("router_models") or []),
                     router_autoload=bool(applied.get("router_autoload", True)),
                     reloaded=list(applied.get("reloaded") or []))
    if entry["state"] == "failed":
        entry["error"] = str(applied.get("error") or applied.get("msg") or "failed")
    return entry


def early_entry(name: str, state: str, error: str = "", unit: str = "", changed: bool = False) -> dict:
    """A row for an instance that never reached the apply step (not plannable yet, refused, external)."""
    entry = {"instance": name, "unit": unit, "state": state, "changed": changed, "restarted": False}
    if error:
        entry["error"] = error
    return entry


def stopped_entry(name: str, changed: bool, unit: str = "") -> dict:
    """The row of an instance in state stopped: stopped by this run (changed), or already stopped."""
    return {"instance": name, "unit": unit, "state": "stopped", "changed": changed, "restarted": False}


def absent_entry(name: str, changed: bool, unit: str = "") -> dict:
    """The row of an instance in state absent: removed by this run (changed), or already gone."""
    return {"instance": name, "unit": unit, "state": "absent", "changed": changed, "restarted": False}
