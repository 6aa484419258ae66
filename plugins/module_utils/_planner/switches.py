"""How the planner reads on/off style preset keys that several rules consult.

Spec sections 3, 8.2, 12.3, 13.1, 13.10. Kept in one place so every rule that
asks "is speculative decoding on?" or "is SIDE_SLOT on?" gets the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    has_any_flag,
    has_flag_prefix,
)

# SIDE_SLOT and SLOT_PERSIST: Loki's own truthy set (case-insensitive).
_LOKI_TRUTHY = ("on", "1", "true", "yes", "oui")

SPEC_OFF = "off"
SPEC_UNREADABLE = "?"
_SPEC_MODES = {
    "": SPEC_OFF,
    "off": SPEC_OFF,
    "non": SPEC_OFF,
    "no": SPEC_OFF,
    "0": SPEC_OFF,
    "auto": "auto",
    "mtp": "mtp",
    "ngram": "ngram",
    "mtp+ngram": "mtp+ngram",
    "ngram+mtp": "mtp+ngram",
}

SPLIT_NONE = ""
SPLIT_TENSOR = "tensor"
SPLIT_UNREADABLE = "?"
_SPLIT_OFF_WORDS = ("", "off", "layer", "non", "no", "0")

_SPEC_USER_FLAGS = (
    "--spec-type",
    "--spec_type",
    "-md",
    "--model-draft",
    "--spec-draft-model",
    "-hfd",
    "-hfrd",
    "--spec-draft-hf",
    "--hf-repo-draft",
    "--spec-default",
)
_SPEC_USER_ENV = ("LLAMA_ARG_SPEC_TYPE", "LLAMA_ARG_SPEC_DRAFT_MODEL", "LLAMA_ARG_SPEC_DRAFT_HF_REPO")


def loki_truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in _LOKI_TRUTHY


def side_slot_on(preset: Mapping[str, str]) -> bool:
    return loki_truthy(preset.get("SIDE_SLOT"))


def slot_persist_on(preset: Mapping[str, str]) -> bool:
    return loki_truthy(preset.get("SLOT_PERSIST"))


def spec_mode(preset: Mapping[str, str]) -> str:
    """off, auto, mtp, ngram, mtp+ngram, or ``?`` when SPEC cannot be read."""
    return _SPEC_MODES.get(preset.get("SPEC", "").strip().lower(), SPEC_UNREADABLE)


def spec_user_set(extra: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    """Speculative decoding already configured by hand (EXTRA_ARGS or LLAMA_ARG_*)."""
    return (
        has_any_flag(extra, *_SPEC_USER_FLAGS)
        or has_flag_prefix(extra, "--spec-ngram-", "--spec_ngram_") != ""
        or any(arg_env.get(k, "") for k in _SPEC_USER_ENV)
    )


def split_mode_key(preset: Mapping[str, str]) -> str:
    """SPLIT_MODE: ``""`` (layer split, nothing to do), ``tensor``, or ``?``."""
    value = preset.get("SPLIT_MODE", "").strip().lower()
    if value in _SPLIT_OFF_WORDS:
        return SPLIT_NONE
    return SPLIT_TENSOR if value == "tensor" else SPLIT_UNREADABLE
