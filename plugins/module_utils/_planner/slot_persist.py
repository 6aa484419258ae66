"""SLOT_PERSIST: keep the slot state across preset switches (plan only).

Spec section 12.3. The runtime part (saving slot 0 before a switch, the
fingerprint of the launch, restoring on return) is Loki-specific and not
ported; what remains is the decision whether the key is honoured, which
gates ``--slot-save-path`` (spec 12.2) and yields one refusal note.

A saved state says nothing about the engine or settings that computed it,
so anything that makes the restored state untrustworthy (a draft model, a
state split across cards, weights on the CPU) or unsafe (a server others can
reach without a key) refuses the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import is_external, slot_save_safe
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import supports_slot_save_path
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import cpu_weights
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.switches import (
    SPEC_OFF,
    SPLIT_NONE,
    slot_persist_on,
    spec_mode,
    spec_user_set,
    split_mode_key,
)


def slot_persist_plan(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[bool, str]:
    """Is SLOT_PERSIST honoured for this launch -> (ok, why); why ``""`` = key not set."""
    if not slot_persist_on(preset):
        return False, ""
    arg_env = facts.arg_env
    if is_external(preset):
        return False, "external preset"
    if not supports_slot_save_path(facts.help):
        return False, "this engine does not know --slot-save-path"
    if has_any_flag(extra, "--slot-save-path") or arg_env.get("LLAMA_ARG_SLOT_SAVE_PATH", ""):
        return False, "--slot-save-path is already set by hand"
    if not facts.slot_dir:
        return False, "slot directory unavailable"
    if (
        spec_mode(preset) != SPEC_OFF
        or spec_user_set(extra, arg_env)
        or arg_env.get("LLAMA_ARG_SPEC_TYPE", "")
    ):
        # The engine saves the target model's state only, not the draft's.
        return False, "speculative decoding: the engine's save does not keep the draft state"
    if split_mode_key(preset) != SPLIT_NONE:
        return False, "SPLIT_MODE: state spread across cards, saving not validated"
    if not slot_save_safe(preset, extra, facts):
        return False, "engine reachable by others without an API key (HOST=127.0.0.1 or an API key)"
    block_count = facts.gguf.block_count if facts.gguf is not None else 0
    reason = cpu_weights(preset, extra, arg_env, block_count)
    if reason:
        return False, reason
    return True, ""


def slot_persist_note(ok: bool, why: str) -> Note | None:
    """The refusal note, or None when accepted or the key is absent."""
    if ok or not why:
        return None
    return Note(
        "persist.refused",
        f"SLOT_PERSIST refused ({why}): the slot state will not be kept across preset switches",
    )
