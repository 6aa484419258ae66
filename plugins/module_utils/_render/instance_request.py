# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The small texts the instance step writes beside its service (its planning state file, its credential files),
and how long a start may take.

Pure; the instance step (``_converge/step.py``) calls it for both runtimes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

GIB = 1 << 30


def state_content(facts: Mapping, placement: Mapping | None = None) -> str:
    """The planning state file of a verified instance: the free RAM its plan used, and for a placed replica its
    placement's record (the judge finds the fleet's replicas by it). As the role wrote it before (to_nice_json), so
    an upgrade leaves a hand-placed instance's file as it is."""
    state: dict = {"ram_avail_mib": int(facts.get("ram_avail_mib") or 0)}
    if placement:
        state["placement"] = dict(placement)
    return json.dumps(state, indent=4) + "\n"


def health_timeout_s(model_bytes: int, base_s: int, per_gib_s: int) -> int:
    """How long a (re)started instance may take to answer /health 200: grows with the model."""
    return int(base_s + -(-per_gib_s * max(model_bytes, 0) // GIB))


def credential_content(holds: str, key: str) -> str:
    """A credential file's text: the bare key, or the environment file of an engine without --api-key-file."""
    return f"LLAMA_API_KEY={key}\n" if holds == "env" else f"{key}\n"
