"""METRICS: the engine's Prometheus endpoint (``--metrics``, ``GET /metrics``).

A llamafleet key, not Loki's: a fleet is scraped, a single workstation rarely is. The flag goes in like any other
(checked by the engine's flag table and its own parser), and the plan's decision says whether the engine that runs
serves ``/metrics``, so the controller's scrape targets read the decision instead of the argv.

llama.cpp keeps ``/metrics`` behind the API key when the server has one (only ``/health`` and the model list are
public), so a scraper needs the instance's key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import TRUTHY, FlagTable
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note

METRICS_FLAG = "--metrics"
METRICS_ENV = "LLAMA_ARG_ENDPOINT_METRICS"


def metrics_set_by_hand(extra: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    """``--metrics`` in EXTRA_ARGS, or the service environment's LLAMA_ARG_ENDPOINT_METRICS set to a word the engine
    reads as true (it reads the variable only then)."""
    return has_any_flag(extra, METRICS_FLAG) or arg_env.get(METRICS_ENV, "") in TRUTHY


def metrics_args(preset: Mapping[str, str], extra: Sequence[str], arg_env: Mapping[str, str],
                 table: FlagTable) -> tuple[list[str], list[Note]]:
    """``--metrics`` when METRICS is on (the typed preset says ``on``); nothing when it is off or already set by hand.

    An engine whose help is known and has no ``--metrics`` would exit on it: refused, naming the key."""
    if preset.get("METRICS", "") != "on":
        return [], []
    if metrics_set_by_hand(extra, arg_env):
        return [], [Note("metrics.on", "METRICS=on: /metrics was already enabled by hand (EXTRA_ARGS or "
                         f"{METRICS_ENV}); nothing added", code="by_hand")]
    if table and table.lookup(METRICS_FLAG) is None:
        raise PlanError("METRICS=on, but this engine's --help has no --metrics: it would exit at start; use an "
                        "engine that serves Prometheus metrics, or METRICS=off", key="METRICS", value="on")
    return [METRICS_FLAG], [Note("metrics.on", "METRICS=on: --metrics serves Prometheus metrics at /metrics, "
                                 "behind the API key when the instance has one")]


def metrics_served(argv: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    """Does the engine this argv and environment start serve ``/metrics``? (The plan's decision.)"""
    return METRICS_FLAG in argv[1:] or arg_env.get(METRICS_ENV, "") in TRUTHY
