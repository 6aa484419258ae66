"""Hybrid-model checkpoints (``--ctx-checkpoints``, ``--checkpoint-min-step``).

Spec section 12.4. A hybrid model (recurrent layers: Qwen3.5/3.6, Qwen3-Next)
cannot rewind its recurrent state like a KV cache; llama-server keeps exact
copies of it (checkpoints) and resumes from the nearest. Before build 10864
the engine dropped a checkpoint too close to the previous one even when the
list had room, so a resume could fall up to ~8 k tokens back. Checkpoints
never change what the model sees; they only cost prefill time and host RAM.

Each flag has its own guard: a hand-written ``--ctx-checkpoints`` does not
disable the automatic spacing, which is a separate question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    flag_value,
    has_any_flag,
    parse_c_int,
    parse_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import (
    supports_checkpoint_min_step,
    supports_ctx_checkpoints,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import (
    MIB,
    is_hybrid,
    state_bytes,
)

# First build that evicts a checkpoint only when the list is full (llama.cpp PR #28302).
ENGINE_MIN_RECOMMENDED = 10864
# Spacing set on an old engine: tighter than the engine's 8192, never 0 (see step.refused).
CKPT_AUTO_MIN_STEP = 2048
# llama.cpp's n_ctx_checkpoints default.
ENGINE_CKPT_DEFAULT = 32
# Size of one checkpoint when the GGUF cannot tell (70-200 MiB measured on Qwen hybrids).
CKPT_FALLBACK_MIB = 200
# Slots counted when PARALLEL is unreadable or "auto": what recent engines open.
_AUTO_SLOTS = 4
# The model is "tight" in RAM above this share of it.
_RAM_TIGHT_SHARE = 0.7

CKPT_FLAGS = ("-ctxcp", "--ctx-checkpoints", "--swa-checkpoints")
STEP_FLAGS = ("-cms", "--checkpoint-min-step")
CKPT_ENV = "LLAMA_ARG_CTX_CHECKPOINTS"
STEP_ENV = "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT"
PARALLEL_FLAGS = ("-np", "--parallel")


def engine_build_notice(build: int) -> str:
    """Warning for an engine that evicts hybrid checkpoints too early; ``""`` = nothing to say."""
    if build <= 0 or build >= ENGINE_MIN_RECOMMENDED:
        return ""
    return (
        f"engine b{build}: hybrid-model checkpoints (Qwen3.5/3.6, Qwen3-Next…) are evicted too early there — "
        f"up to ~8 k tokens recomputed at each resume. Fixed from b{ENGINE_MIN_RECOMMENDED}."
    )


def ckpt_count(preset: Mapping[str, str], extra: Sequence[str], arg_env: Mapping[str, str]) -> int:
    """Checkpoints per slot the engine will keep; -1 = unreadable hand-written value.

    EXTRA_ARGS, else LLAMA_ARG_CTX_CHECKPOINTS, else a valid CTX_CHECKPOINTS,
    else the engine default.
    """
    value = flag_value(extra, *CKPT_FLAGS)
    if value == "":
        value = arg_env.get(CKPT_ENV, "")
    if value == "":
        n = parse_c_int(preset.get("CTX_CHECKPOINTS", "").strip())
        return n if n is not None and n >= 0 else ENGINE_CKPT_DEFAULT
    n = parse_int(value.strip())
    return -1 if n is None or n < 0 else n


def ckpt_slots(preset: Mapping[str, str], extra: Sequence[str]) -> int:
    """Slots the engine opens, each with its own checkpoint list; unreadable or auto counts 4."""
    value = flag_value(extra, *PARALLEL_FLAGS)
    if value == "":
        value = preset.get("PARALLEL", "").strip()
    if value == "":
        return 1
    n = parse_int(value.strip())
    return n if n is not None and n > 0 else _AUTO_SLOTS


def ckpt_mib(g: GGUFInfo | None) -> int:
    """Size of one checkpoint (the f32 recurrent state), rounded up to MiB."""
    if g is not None:
        recurrent = state_bytes(g, "", "")[1]
        if recurrent > 0:
            return (recurrent + MIB - 1) // MIB
    return CKPT_FALLBACK_MIB


def ram_tight(facts: HostFacts) -> bool:
    """The model fills more than 70 % of RAM: checkpoints would take from its page cache."""
    return (
        facts.ram_mib > 0
        and facts.model_bytes > 0
        and float(facts.model_bytes) > _RAM_TIGHT_SHARE * float(facts.ram_mib) * MIB
    )


def _ctx_checkpoints_part(
    preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts, hybrid: bool
) -> tuple[list[str], list[Note]]:
    """Parts A and A': CTX_CHECKPOINTS, or RAM advice for a hybrid model when it is empty."""
    value = preset.get("CTX_CHECKPOINTS", "").strip()
    arg_env = facts.arg_env
    if value:
        # Beyond a C int the engine would not start (std::stoi): unreadable too.
        n = parse_c_int(value)
        if n is None or n < 0:
            text = f"CTX_CHECKPOINTS={value} unreadable (a number of checkpoints per slot, ≥ 0): ignored"
            return [], [Note("ckpt.invalid", text)]
        if not supports_ctx_checkpoints(facts.help):
            text = "this engine does not know --ctx-checkpoints: CTX_CHECKPOINTS ignored"
            return [], [Note("ckpt.unsupported", text)]
        if has_any_flag(extra, *CKPT_FLAGS):
            return [], []
        if arg_env.get(CKPT_ENV, ""):
            return [], [Note("ckpt.env", f"{CKPT_ENV} is set: CTX_CHECKPOINTS ignored")]
        return ["--ctx-checkpoints", str(n)], []
    if (
        hybrid
        and ram_tight(facts)
        and supports_ctx_checkpoints(facts.help)
        and not has_any_flag(extra, *CKPT_FLAGS)
        and not arg_env.get(CKPT_ENV, "")
    ):
        # Advice only: fewer checkpoints means more prefill, and only the user can measure which costs more.
        text = (
            f"hybrid model of {facts.model_bytes >> 30} GiB for {facts.ram_mib >> 10} GiB of RAM: "
            f"up to {ENGINE_CKPT_DEFAULT} checkpoints (~{ckpt_mib(facts.gguf)} MiB each) take from the "
            "page cache of the weights. CTX_CHECKPOINTS=8 to 16 if throughput drops."
        )
        return [], [Note("ckpt.ram_advice", text)]
    return [], []


def _min_step_part(value: str, extra: Sequence[str], facts: HostFacts) -> tuple[list[str], list[Note]]:
    """Part B: an explicit CKPT_MIN_STEP (trimmed, non-empty); beyond a C int it is refused too."""
    n = parse_c_int(value)
    if n is None or n <= 0:
        # 0 means "no minimum": close checkpoints fill the list and FIFO eviction
        # ends up dropping the one at the start of the conversation.
        text = (
            f"CKPT_MIN_STEP={value} refused (a number of tokens > 0; 0 would let the engine drop the "
            "checkpoint at the start of the conversation): engine default"
        )
        return [], [Note("step.refused", text)]
    if not supports_checkpoint_min_step(facts.help):
        text = "this engine does not know --checkpoint-min-step: CKPT_MIN_STEP ignored"
        return [], [Note("step.unsupported", text)]
    if has_any_flag(extra, *STEP_FLAGS):
        return [], []
    if facts.arg_env.get(STEP_ENV, ""):
        return [], [Note("step.env", f"{STEP_ENV} is set: CKPT_MIN_STEP ignored")]
    return ["--checkpoint-min-step", str(n)], []


def _auto_step_part(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[list[str], Note]:
    """Part C for a hybrid model on an old engine: tighten the spacing when RAM allows."""
    notice = engine_build_notice(facts.engine_build)
    step_user = has_any_flag(extra, *STEP_FLAGS) or bool(facts.arg_env.get(STEP_ENV, ""))
    if step_user or not supports_checkpoint_min_step(facts.help):
        return [], Note("ckpt.notice", notice, code="plain")
    n = ckpt_count(preset, extra, facts.arg_env)
    if n <= 0:
        # Checkpoints disabled (or unreadable): spacing them is pointless.
        return [], Note("ckpt.notice", notice, code="plain")
    if facts.ram_mib <= 0 or facts.model_bytes <= 0 or ram_tight(facts):
        text = (
            f"{notice} No tighter spacing by default: RAM unknown or already taken by the model "
            f"(CKPT_MIN_STEP={CKPT_AUTO_MIN_STEP} to force it)."
        )
        return [], Note("ckpt.notice", text, code="ram")
    # One list PER SLOT: with PARALLEL=4, four lists fill up.
    total = n * ckpt_slots(preset, extra)
    worst = total * ckpt_mib(facts.gguf)
    if facts.ram_avail_mib > 0 and worst > facts.ram_avail_mib // 4:
        text = (
            f"{notice} No tighter spacing by default: {total} checkpoints (~{worst} MiB) would exceed "
            f"a quarter of the free RAM (CKPT_MIN_STEP={CKPT_AUTO_MIN_STEP} to force it)."
        )
        return [], Note("ckpt.notice", text, code="ram_free")
    text = (
        f"{notice} → --checkpoint-min-step {CKPT_AUTO_MIN_STEP}: exact checkpoints closer together, "
        f"~{worst} MiB of host RAM at most. CKPT_MIN_STEP=<tokens> to fix."
    )
    return ["--checkpoint-min-step", str(CKPT_AUTO_MIN_STEP)], Note("ckpt.notice", text, code="applied")


def ckpt_args(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[list[str], list[Note]]:
    """``--ctx-checkpoints`` / ``--checkpoint-min-step`` the planner adds, and its notes."""
    hybrid = is_hybrid(facts.gguf)
    args, notes = _ctx_checkpoints_part(preset, extra, facts, hybrid)

    step = preset.get("CKPT_MIN_STEP", "").strip()
    if step:
        # An explicit spacing replaces the automatic one entirely (no build notice either).
        step_args, step_notes = _min_step_part(step, extra, facts)
        return args + step_args, notes + step_notes

    if not hybrid or not engine_build_notice(facts.engine_build):
        return args, notes
    auto_args, notice = _auto_step_part(preset, extra, facts)
    return args + auto_args, [*notes, notice]
