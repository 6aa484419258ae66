"""Fidelity guards: say what the final command line changes in the model's maths.

Spec sections 9.2-9.4. The planner never picks a quantised KV cache, an
approximate cache reuse or a sliding context on the user's behalf, and never
removes one either: these are legitimate trade-offs when VRAM is short. They
must however be visible, so each one found on the final command line (or in
the LLAMA_ARG_* variables the engine reads when the command line is silent)
becomes a note. Nothing here adds or removes a flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    env_truthy,
    flag_name,
    flag_value,
    has_any_flag,
    has_flag_prefix,
    parse_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import old_context_shift_default
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import tensor_override

ENGINE_DEFAULT_KV = "f16"

# K/V pairs llama.cpp's CUDA flash-attention kernels handle natively with the
# default build options (GGML_CUDA_FA_ALL_QUANTS=OFF); any other pair works but
# is converted back to f16 at every step.
FAST_KV_PAIRS = frozenset({("f16", "f16"), ("q8_0", "q8_0"), ("q4_0", "q4_0"), ("bf16", "bf16")})

_LABEL_BF16 = "numerically different from f16 (shorter mantissa)"
_LABEL_SLIGHT = "slightly changes the outputs compared with f16"
_LABEL_MEASURABLE = "measurable loss compared with f16"
_LABEL_UNKNOWN = "changes the outputs compared with f16"

# Rank 0 computes the same thing as f16; the higher the rank, the further the
# outputs drift. Types missing here (newer than this table) are assumed lossy.
_KV_FIDELITY: dict[str, tuple[int, str]] = {
    "": (0, ""),
    "f16": (0, ""),
    "f32": (0, ""),
    "bf16": (1, _LABEL_BF16),
    "q8_0": (2, _LABEL_SLIGHT),
    "q5_0": (2, _LABEL_SLIGHT),
    "q5_1": (2, _LABEL_SLIGHT),
    "q4_0": (3, _LABEL_MEASURABLE),
    "q4_1": (3, _LABEL_MEASURABLE),
    "iq4_nl": (3, _LABEL_MEASURABLE),
}

VISION_FLAGS = ("-mm", "--mmproj", "-mmu", "--mmproj-url")
VISION_ENV = ("LLAMA_ARG_MMPROJ", "LLAMA_ARG_MMPROJ_URL")
SYNTH_PREFIX = "--spec-synth-"
SYNTH_ENV = "LLAMA_ARG_SPEC_SYNTH_LEN"
_FROM_EXTRA = "EXTRA_ARGS"


def _or_default(kv_type: str) -> str:
    return kv_type or ENGINE_DEFAULT_KV


def slow_kv_warning(k: str, v: str) -> Note | None:
    """Warn when the effective K/V pair has no fast CUDA kernel (spec 9.2).

    Empty sides are the engine default, f16. Type names are compared as
    written: llama.cpp itself only accepts its lower-case names.
    """
    k, v = _or_default(k), _or_default(v)
    if (k, v) in FAST_KV_PAIRS:
        return None
    return Note(
        "kv.slow",
        f"KV cache {k}/{v} not accelerated by llama.cpp CUDA (converted to f16 at each step, slow). "
        "Prefer q8_0/q8_0, q4_0/q4_0 or f16.",
    )


def kv_fidelity(kv_type: str) -> tuple[int, str]:
    """(rank, label) of one cache type against the f16 reference."""
    return _KV_FIDELITY.get(kv_type.strip().lower(), (2, _LABEL_UNKNOWN))


def kv_fidelity_note(k: str, v: str, source: str, extra: Sequence[str], arg_env: Mapping[str, str]) -> Note | None:
    """Say what a non-f16 KV cache costs and where it comes from (spec 9.3)."""
    rank_k, label_k = kv_fidelity(k)
    rank_v, label_v = kv_fidelity(v)
    if rank_k == 0 and rank_v == 0:
        return None
    # The worse side speaks; on a tie K's label is kept.
    label = label_v if rank_v > rank_k else label_k
    origin = f" ({source})" if source else ""
    text = f"KV cache {_or_default(k)}/{_or_default(v)}{origin}: {label} — the user's choice, left as is."
    if tensor_override(extra, arg_env):
        # With placement pinned by hand, --fit does not run and cannot absorb
        # the extra VRAM a switch back to f16 would need.
        text += (
            " Going back to f16 needs more VRAM, and the placement fixed by -ot/--n-cpu-moe keeps --fit "
            "from compensating: --n-cpu-moe would probably have to go up."
        )
    return Note("fidelity.kv", text)


def vision_loaded(extra: Sequence[str], facts: HostFacts) -> bool:
    """A projector is loaded: llama.cpp then disables context shift and cache reuse."""
    return (
        bool(facts.mmproj)
        or has_any_flag(extra, *VISION_FLAGS)
        or any(facts.arg_env.get(key, "") for key in VISION_ENV)
    )


def context_shift(extra: Sequence[str], arg_env: Mapping[str, str], help_text: str) -> tuple[bool, str]:
    """(on, who decided); who = ``""`` when it is the engine's own default.

    The last of --context-shift / --no-context-shift in EXTRA_ARGS wins, as in
    llama-server. Engines older than --context-shift only know the off switch
    and shift by default; an unknown engine (empty help) is assumed not to.
    """
    decided: bool | None = None
    for tok in extra:
        name = flag_name(tok)
        if name == "--context-shift":
            decided = True
        elif name == "--no-context-shift":
            decided = False
    if decided is not None:
        return decided, _FROM_EXTRA
    if old_context_shift_default(help_text):
        # Such an engine ignores LLAMA_ARG_CONTEXT_SHIFT; only the NO_ variable stops it.
        if env_truthy(arg_env.get("LLAMA_ARG_NO_CONTEXT_SHIFT")):
            return False, "LLAMA_ARG_NO_CONTEXT_SHIFT"
        return True, ""
    if env_truthy(arg_env.get("LLAMA_ARG_CONTEXT_SHIFT")):
        return True, "LLAMA_ARG_CONTEXT_SHIFT"
    return False, ""


def _context_shift_note(extra: Sequence[str], facts: HostFacts, vision: str) -> Note | None:
    on, source = context_shift(extra, facts.arg_env, facts.help)
    if not on:
        return None
    consequence = (
        "when the context is full, old tokens are dropped and the model silently loses part of the conversation"
    )
    if source == "":
        return Note(
            "lossy.shift_default",
            f"warning: this old llama-server shifts the context by default — {consequence}{vision}. "
            "--no-context-shift in EXTRA_ARGS prevents it.",
        )
    return Note("lossy.shift", f"warning: --context-shift ({source}) — {consequence}{vision}.")


def _cache_reuse_note(extra: Sequence[str], facts: HostFacts, vision: str) -> Note | None:
    # EXTRA_ARGS decides whenever it has the flag, "--cache-reuse 0" included.
    raw, source = flag_value(extra, "--cache-reuse"), _FROM_EXTRA
    if raw == "":
        raw, source = facts.arg_env.get("LLAMA_ARG_CACHE_REUSE", ""), "LLAMA_ARG_CACHE_REUSE"
    chunk = parse_int(raw.strip())
    if chunk is None or chunk <= 0:
        return None
    return Note(
        "lossy.cache_reuse",
        f"warning: --cache-reuse {chunk} ({source}) — reuses cache chunks computed under another prefix: "
        f"the outputs are no longer exactly those of a full computation{vision}.",
    )


def _synthetic_note(extra: Sequence[str], facts: HostFacts) -> Note | None:
    name = has_flag_prefix(extra, SYNTH_PREFIX)
    if not name and facts.arg_env.get(SYNTH_ENV, ""):
        name = SYNTH_ENV
    if not name:
        return None
    return Note(
        "lossy.synth",
        f"warning: {name} — the engine accepts draft tokens AT RANDOM, without verification: the answers are "
        "no longer the model's. Meant for benchmarks only, remove it.",
    )


def lossy_cache_notes(extra: Sequence[str], facts: HostFacts) -> list[Note]:
    """Cache settings that change what the model sees (spec 9.4).

    In order: context shift, approximate cache reuse, synthetic draft
    acceptance. --swa-full is lossless and never mentioned.
    """
    vision = " (vision loaded: llama.cpp ignores it anyway)" if vision_loaded(extra, facts) else ""
    found = (
        _context_shift_note(extra, facts, vision),
        _cache_reuse_note(extra, facts, vision),
        _synthetic_note(extra, facts),
    )
    return [note for note in found if note is not None]
