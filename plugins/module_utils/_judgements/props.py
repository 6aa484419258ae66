# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a started engine runs the plan, by its own ``GET /props``; and what a report shows of it.

Pure: the plan's expectations (``_planner/expectations.py``) against the engine's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import CTX_PAD


def props_problems(props: Mapping, expected: Mapping) -> list[str]:
    """Where ``GET /props`` of a started engine contradicts the expectations; [] = it runs the plan.

    ``props`` is the engine's JSON; ``expected`` an ``Expectations.as_dict()``. Only what the plan fixed is
    judged: a context must be the planned one padded (per slot, or whole with a unified cache).
    """
    problems = []
    settings = props.get("default_generation_settings") if isinstance(props, Mapping) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, Mapping) else None
    slots = props.get("total_slots") if isinstance(props, Mapping) else None
    model = props.get("model_path") if isinstance(props, Mapping) else None
    if not isinstance(n_ctx, int) or not isinstance(slots, int) or slots < 1:
        return ["/props did not give default_generation_settings.n_ctx and total_slots"]
    want_slots = int(expected.get("slots") or 0)
    if want_slots and slots != want_slots:
        problems.append(f"total_slots is {slots}, the plan has {want_slots} (--parallel)")
    want_ctx = int(expected.get("ctx") or 0)
    if want_ctx:
        unified = expected.get("kv_unified") or ""
        totals = {"on": [n_ctx], "off": [n_ctx * slots]}.get(unified, [n_ctx, n_ctx * slots])
        padded = -(-want_ctx // CTX_PAD) * CTX_PAD
        if not any(padded - CTX_PAD * slots < total <= padded for total in totals):
            problems.append(
                f"n_ctx is {n_ctx} per slot with {slots} slot(s), the plan has a context of {want_ctx} tokens"
            )
    want_model = expected.get("model_path") or ""
    if want_model and model != want_model:
        problems.append(f"model_path is {model!r}, the plan has {want_model!r}")
    return problems


def props_summary(props: Mapping | None) -> dict:
    """The few /props fields a report shows."""
    if not props:
        return {}
    settings = props.get("default_generation_settings") or {}
    return {
        "n_ctx": settings.get("n_ctx") if isinstance(settings, Mapping) else None,
        "total_slots": props.get("total_slots"),
        "model_path": props.get("model_path"),
        # The name /v1/models lists (--alias; recent engines only): what a gateway routes by.
        "model_alias": props.get("model_alias"),
        "build_info": props.get("build_info"),
    }
