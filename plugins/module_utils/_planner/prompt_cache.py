"""Prompt cache in host RAM (``--cache-ram``) and the slot save path.

Spec sections 12.1 and 12.2. llama-server keeps an exact copy of the slot
states it leaves in host RAM and reloads them byte for byte when the
conversation comes back; its 8 GiB default is too small for one long dense
conversation plus a side job. The planner only grows that cache when it can
measure the need and the RAM is free, never below the engine default, and
stays silent as soon as the user decided (CACHE_RAM, EXTRA_ARGS, the
LLAMA_ARG_CACHE_RAM variable).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import slot_save_safe
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    C_INT_MAX,
    flag_value,
    has_any_flag,
    parse_c_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import (
    supports_cache_ram,
    supports_slot_save_path,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import serve_ctx
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import (
    cpu_weights,
    effective_kv_types,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import MIB, state_bytes
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.slot_persist import slot_persist_plan

# llama.cpp's own cache_ram_mib default (common.h); the planner never goes below it.
ENGINE_CACHE_RAM_DEFAULT_MIB = 8192
CACHE_RAM_FLAGS = ("-cram", "--cache-ram")
CACHE_RAM_ENV = "LLAMA_ARG_CACHE_RAM"
SLOT_SAVE_FLAG = "--slot-save-path"

# Room for the main conversation AND a side job's state.
_NEED_FACTOR = 2.5
# Weights plus KV cache must leave this share of VRAM, or weights spill to RAM.
_VRAM_MARGIN = 0.9
# The engine keeps at most 32 checkpoints per sequence; count one per 8 k tokens.
_CKPT_CAP = 32
_CKPT_SPACING_TOKENS = 8192


def cache_ram_setting(preset: Mapping[str, str]) -> tuple[str, bool, bool]:
    """Read CACHE_RAM -> (manual value, auto, ok).

    Empty or ``auto`` (any case) is automatic sizing; an integer >= -1 is a
    manual MiB count, re-formatted (-1 = unlimited, 0 = cache off); anything
    else, a number beyond a C int included (the engine would not start), is
    unreadable (ok False).
    """
    value = preset.get("CACHE_RAM", "").strip()
    if value == "" or value.lower() == "auto":
        return "", True, True
    n = parse_c_int(value)
    if n is not None and n >= -1:
        return str(n), False, True
    return "", False, False


def cache_ram_auto(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[int, str]:
    """Prompt-cache size for CACHE_RAM=auto -> (MiB, why); 0 keeps the engine default."""
    g = facts.gguf
    if facts.vram_mib <= 0:
        return 0, "NVIDIA VRAM unknown"
    if g is None:
        return 0, "GGUF metadata unreadable"
    if facts.ram_mib <= 0 or facts.ram_avail_mib <= 0:
        return 0, "RAM unknown"
    if facts.model_bytes <= 0:
        return 0, "model size unknown"
    # Weights or KV in host RAM: the cache would compete with their page cache.
    reason = cpu_weights(preset, extra, facts.arg_env, g.block_count)
    if reason:
        return 0, reason
    k_type, v_type = effective_kv_types(preset, extra, facts.arg_env)[:2]
    per_token, recurrent = state_bytes(g, k_type, v_type)
    ctx = serve_ctx(preset, extra, g)
    if per_token <= 0 or ctx <= 0:
        return 0, "state size unknown"
    kv_bytes = per_token * float(ctx)
    if float(facts.model_bytes) + kv_bytes > _VRAM_MARGIN * float(facts.vram_mib) * MIB:
        return 0, "model too big for VRAM: weights stay in RAM"
    state = kv_bytes
    if recurrent > 0:
        # Checkpoints of the recurrent state, plus the current state itself.
        checkpoints = min(_CKPT_CAP, ctx // _CKPT_SPACING_TOKENS + 1) + 1
        state += float(recurrent) * float(checkpoints)
    need = math.ceil(_NEED_FACTOR * state / MIB)
    ceiling = min(facts.ram_mib * 30 // 100, facts.ram_avail_mib // 2)
    if ceiling <= ENGINE_CACHE_RAM_DEFAULT_MIB:
        return 0, f"free RAM too tight (ceiling {ceiling} MiB)"
    if need <= ENGINE_CACHE_RAM_DEFAULT_MIB:
        return 0, f"the default is enough (estimated need {need} MiB)"
    # --cache-ram is read with std::stoi: never more than a C int, whatever the host reports.
    return min(need, ceiling, C_INT_MAX), f"estimated need {need} MiB, ceiling {ceiling} MiB"


def cache_ram_args(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[list[str], list[Note]]:
    """The ``--cache-ram`` the planner adds, and what it says about it (spec 12.1)."""
    manual, auto, ok = cache_ram_setting(preset)
    if not ok:
        raw = preset.get("CACHE_RAM", "")
        return [], [Note("cache.invalid", f"CACHE_RAM={raw} unreadable (a number of MiB, -1, 0 or auto): ignored")]
    if not supports_cache_ram(facts.help):
        if auto:
            return [], []
        return [], [Note("cache.unsupported", "this engine does not know --cache-ram: CACHE_RAM ignored")]
    if has_any_flag(extra, *CACHE_RAM_FLAGS):
        return [], []
    if facts.arg_env.get(CACHE_RAM_ENV, ""):
        # The command line would override the variable the user set on purpose.
        if auto:
            return [], []
        return [], [Note("cache.env", f"{CACHE_RAM_ENV} is set: CACHE_RAM ignored")]
    if not auto:
        return ["--cache-ram", manual], []
    mib, why = cache_ram_auto(preset, extra, facts)
    if mib <= 0:
        return [], []
    text = (
        f"prompt cache: --cache-ram {mib} (host RAM, exact copy of the state, never VRAM; {why}). "
        "CACHE_RAM=<MiB> to fix, 0 to disable."
    )
    return ["--cache-ram", str(mib)], [Note("cache.auto", text)]


def cache_ram_off(preset: Mapping[str, str], extra: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    """Is the prompt cache disabled (0) by EXTRA_ARGS, the variable or CACHE_RAM, in that order?"""
    value = flag_value(extra, *CACHE_RAM_FLAGS)
    if value == "":
        value = arg_env.get(CACHE_RAM_ENV, "")
    if value == "":
        value = cache_ram_setting(preset)[0]
    return value.strip() == "0"


def cache_isolation_on(preset: Mapping[str, str]) -> bool:
    """CACHE_ISOLATE=off (any case) turns off slot erasure after side jobs."""
    return preset.get("CACHE_ISOLATE", "").strip().lower() != "off"


def slot_save_args(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> list[str]:
    """``--slot-save-path <dir>`` when it is useful and safe (spec 12.2); never a note.

    The flag unlocks every /slots action, save and restore included, which
    write GiB to disk for whoever reaches the server: only on a loopback host
    or behind an API key.
    """
    if not facts.slot_dir or not supports_slot_save_path(facts.help) or has_any_flag(extra, SLOT_SAVE_FLAG):
        return []
    persist_ok = slot_persist_plan(preset, extra, facts)[0]
    isolation_useful = cache_isolation_on(preset) and not cache_ram_off(preset, extra, facts.arg_env)
    if not persist_ok and not isolation_useful:
        return []
    if not slot_save_safe(preset, extra, facts):
        return []
    return [SLOT_SAVE_FLAG, facts.slot_dir]
