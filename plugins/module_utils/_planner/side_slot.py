"""SIDE_SLOT: a second slot for side jobs (spec section 8.2).

With one slot, a verifier, sub-agent or benchmark takes the conversation's
slot and its state has to leave and come back. SIDE_SLOT opens two slots with
a non-unified KV cache and ``-c 2×CTX``: llama.cpp then cuts the pool into two
separate streams of CTX tokens, so neither slot can eat the other's room and
both get the conversation's full window.

The price is a second KV cache (and recurrent state) in VRAM, so the key is
refused when the estimate does not fit, when weights live in host RAM, or
when the user already set one of the levers involved. A refusal leaves argv
byte-identical to a launch without the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import is_external
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    C_INT_MAX,
    has_any_flag,
    parse_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import supports_no_kv_unified
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import DEFAULT_CTX
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import (
    cpu_weights,
    effective_kv_types,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import (
    MIB,
    ceil_mib,
    state_bytes,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.switches import side_slot_on

# EXTRA_ARGS flags that already decide what SIDE_SLOT would set, checked in this order.
SIDE_SLOT_CONFLICT_FLAGS = (
    "-c",
    "--ctx-size",
    "-np",
    "--parallel",
    "-kvu",
    "--kv-unified",
    "-no-kvu",
    "--no-kv-unified",
    "--kv-unified-per-slot",
    "--cache-idle-slots",
    "--no-cache-idle-slots",
)

# The same levers set through the environment: argv would silently override
# them, so a user choice there wins and the key stands down.
SIDE_SLOT_ARG_ENV = (
    "LLAMA_ARG_N_PARALLEL",
    "LLAMA_ARG_KV_UNIFIED",
    "LLAMA_ARG_KV_UNIFIED_PER_SLOT",
    "LLAMA_ARG_CACHE_IDLE_SLOTS",
    "LLAMA_ARG_CTX_SIZE",
)

_VRAM_MARGIN = 0.9


def side_slot_plan(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[int, int, str]:
    """(tokens per slot, extra VRAM MiB, refusal reason).

    Accepted: tokens > 0 (the planner writes ``-c`` as twice that) and reason
    ``""``. Off: ``(0, 0, "")``. Refused: ``(0, 0, reason)``.
    """
    if not side_slot_on(preset):
        return 0, 0, ""
    if is_external(preset):
        return 0, 0, "external preset"
    parallel = preset.get("PARALLEL", "").strip()
    if parallel and parallel != "2":
        return 0, 0, f"PARALLEL={parallel} (SIDE_SLOT opens exactly 2 slots)"
    for flag in SIDE_SLOT_CONFLICT_FLAGS:
        if has_any_flag(extra, flag):
            return 0, 0, f"{flag} is set in EXTRA_ARGS"
    for var in SIDE_SLOT_ARG_ENV:
        if facts.arg_env.get(var, ""):
            return 0, 0, f"{var} is set"
    if not supports_no_kv_unified(facts.help):
        return 0, 0, "this engine does not know --no-kv-unified"
    ctx = parse_int(preset.get("CTX", "").strip() or DEFAULT_CTX)
    if ctx is None or ctx <= 0:
        # 0 would mean "the model's context", which doubling cannot express.
        return 0, 0, "CTX must be an explicit token count"
    if 2 * ctx > C_INT_MAX:
        # llama.cpp reads -c with std::stoi: a larger value stops the engine at start.
        return 0, 0, f"CTX={ctx}: -c {2 * ctx} would exceed llama.cpp's limit of {C_INT_MAX}"
    extra_mib, why = side_slot_vram(preset, extra, facts, ctx)
    if why:
        return 0, 0, why
    return ctx, extra_mib, ""


def side_slot_vram(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts, ctx: int) -> tuple[int, str]:
    """(MiB of the second slot's state, refusal reason); unknown = refused.

    Doubling the KV cache blind is exactly the out-of-memory failure this key
    must not cause, so every unknown input refuses.
    """
    if facts.vram_mib <= 0:
        return 0, "NVIDIA VRAM unknown (macOS, AMD, --device…)"
    gguf = facts.gguf
    if gguf is None:
        return 0, "GGUF metadata unreadable"
    if facts.model_bytes <= 0:
        return 0, "model size unknown"
    # Weights in RAM: a second cache would push automatic placement to move
    # more layers off the GPU.
    in_ram = cpu_weights(preset, extra, facts.arg_env, gguf.block_count)
    if in_ram:
        return 0, in_ram
    k_type, v_type = effective_kv_types(preset, extra, facts.arg_env)[:2]
    per_token, recurrent = state_bytes(gguf, k_type, v_type)
    if per_token <= 0:
        return 0, "state size unknown"
    state = per_token * ctx + float(recurrent)
    state_mib = ceil_mib(state)
    if float(facts.model_bytes) + 2 * state > _VRAM_MARGIN * float(facts.vram_mib) * MIB:
        return 0, f"not enough VRAM: model + 2 × {state_mib} MiB of state exceed 90 % of {facts.vram_mib} MiB"
    return state_mib, ""


def side_slot_note(ctx: int, extra_mib: int, why: str, ngl_forced: bool) -> Note | None:
    """The launch's word on SIDE_SLOT: accepted, refused, or nothing when off."""
    if ctx <= 0:
        if not why:
            return None
        return Note("side.refused", f"SIDE_SLOT refused ({why}): single slot, as without the key")
    text = (
        f"SIDE_SLOT: 2 slots of {ctx} tokens (-c {2 * ctx}, --no-kv-unified), ~{extra_mib} MiB more VRAM "
        "for the second (KV cache and recurrent state; a possible MTP draft and host-RAM checkpoints double too)"
    )
    if ngl_forced:
        # No automatic placement to fall back on: an extra state too many ends in OOM.
        text += "; NGL is forced: watch the VRAM on the first long prompt"
    else:
        text += "; automatic placement will move layers off the GPU if it runs short of room"
    return Note("side.accepted", text)
