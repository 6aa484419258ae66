"""Reasoning switches: REASONING, REASONING_BUDGET, REASONING_PRESERVE (spec section 10)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import flag_values, has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import (
    supports_reasoning,
    supports_reasoning_preserve,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note

# REASONING values that ask for no thinking at all (compared lower-cased).
REASONING_OFF_WORDS = frozenset({"off", "none", "false", "0", "no", "disable", "disabled"})
# -1 is unlimited; 0 would end the thinking at once on vanilla llama.cpp.
DEFAULT_REASONING_BUDGET = "-1"
PRESERVE_FLAGS = {"on": "--reasoning-preserve", "off": "--no-reasoning-preserve"}
CHAT_TEMPLATE_KWARGS = "--chat-template-kwargs"
PRESERVE_KWARG = "preserve_reasoning"

REASONING_UNSUPPORTED_TEXT = "this engine does not know --reasoning: cannot disable reasoning"
REASONING_ACTIVE_UNSUPPORTED_TEXT = (
    "this engine does not know --reasoning: REASONING={} and REASONING_BUDGET not passed (the model's template decides)"
)


def reasoning_active(value: str) -> bool:
    """True when a REASONING value turns thinking on (anything but empty or off-like)."""
    word = value.strip().lower()
    return word != "" and word not in REASONING_OFF_WORDS


def reasoning_args(preset: Mapping[str, str], facts: HostFacts) -> tuple[list[str], list[Note]]:
    """``--reasoning`` (and its budget) for argv item 17.

    Absent means no flag at all: the engine then follows the model's template,
    which is not the same as an explicit "off".
    """
    value = preset.get("REASONING", "").strip()
    if not value:
        return [], []
    if reasoning_active(value):
        if facts.help and not supports_reasoning(facts.help):
            # A deliberate difference from the spec ("no help check"): a known engine whose help
            # lacks --reasoning would exit on it (and its --reasoning-budget takes only -1 or 0).
            # The template decides. An unknown engine (no help) keeps the spec's form.
            return [], [Note("reasoning.unsupported", REASONING_ACTIVE_UNSUPPORTED_TEXT.format(value), code="active")]
        budget = preset.get("REASONING_BUDGET", "") or DEFAULT_REASONING_BUDGET
        return ["--reasoning", value, "--reasoning-budget", budget], []
    if supports_reasoning(facts.help):
        # No budget with "off": one flag less that an engine could refuse.
        return ["--reasoning", "off"], []
    # An unknown flag would stop the engine; a thinking model beats a dead one.
    return [], [Note("reasoning.unsupported", REASONING_UNSUPPORTED_TEXT)]


def reasoning_preserve_args(
    preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts
) -> tuple[list[str], list[Note]]:
    """``--reasoning-preserve`` / ``--no-reasoning-preserve`` for argv item 18.

    Only when REASONING_PRESERVE is set: recent engines preserve by default and
    no global choice suits every chat template, so nothing is chosen for the user.
    """
    raw = preset.get("REASONING_PRESERVE", "")
    word = raw.strip().lower()
    if not word:
        return [], []
    flag = PRESERVE_FLAGS.get(word)
    if flag is None:
        return [], [Note("preserve.invalid", f"REASONING_PRESERVE={raw} unreadable (on or off): ignored")]
    if not supports_reasoning_preserve(facts.help):
        return [], [
            Note("preserve.unsupported", "this engine does not know --reasoning-preserve: REASONING_PRESERVE ignored")
        ]
    if has_any_flag(extra, *PRESERVE_FLAGS.values()):
        return [], []  # the user's own flag comes later in argv and decides
    if PRESERVE_KWARG in " ".join(flag_values(extra, CHAT_TEMPLATE_KWARGS)):
        return [], [
            Note(
                "preserve.kwargs_extra",
                f"{CHAT_TEMPLATE_KWARGS} already sets {PRESERVE_KWARG}: REASONING_PRESERVE ignored",
            )
        ]
    if facts.arg_env.get("LLAMA_ARG_REASONING_PRESERVE", ""):
        return [], [Note("preserve.env", "LLAMA_ARG_REASONING_PRESERVE is set: REASONING_PRESERVE ignored")]
    if PRESERVE_KWARG in facts.arg_env.get("LLAMA_ARG_CHAT_TEMPLATE_KWARGS", ""):
        return [], [
            Note(
                "preserve.kwargs_env",
                f"LLAMA_ARG_CHAT_TEMPLATE_KWARGS already sets {PRESERVE_KWARG}: REASONING_PRESERVE ignored",
            )
        ]
    return [flag], []
