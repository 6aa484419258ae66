"""What a running engine must report when it runs a plan: read once from the final command line.

After a start, ``GET /props`` says what the engine really opened. The instance step compares it with these
expectations (``_judgements/props.py``); anything the command line leaves to the engine (an automatic slot
count, a context ``--fit`` may shrink, a per-slot limit) is expected as "unknown" (0 or ""), and is then
reported but not judged.

Facts measured on llama.cpp b11434 (CPU build, Gemma-3-270M), ``/props`` after ``/health`` answered 200:

    -c 2048 -np 2              n_ctx 1024 per slot, total_slots 2
    -c 2048 -np 2 --kv-unified n_ctx 2048 per slot (every slot sees the whole cache)
    -c 2000 -np 1              n_ctx 2048 (the context is padded up to a multiple of 256)
    -c 3000 -np 3              n_ctx 1024 (3072 padded, split in three)
    -c 4096 (np auto)          n_ctx 4096, total_slots 4 (auto: 4 slots, unified cache)
    -c 0 -np 1                 n_ctx 32768 (the model's training context)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    flag_value,
    has_any_flag,
    parse_c_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import CTX_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import NGL_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.prompt_cache import CACHE_RAM_FLAGS

# llama.cpp pads the context it allocates up to a multiple of this many tokens.
CTX_PAD = 256
MODEL_FLAGS = ("-m", "--model")
PARALLEL_FLAGS = ("-np", "--parallel")
UNIFIED_ON = ("-kvu", "--kv-unified")
UNIFIED_OFF = ("-no-kvu", "--no-kv-unified")
PER_SLOT_LIMIT = ("--kv-unified-per-slot",)


@dataclass(frozen=True)
class Expectations:
    """``ctx``: context tokens the engine opens (0 = the engine decides); ``slots``: server slots (0 = auto);
    ``kv_unified``: "on", "off" or "" (the engine's default); ``model_path``: the -m value as written;
    ``ngl``/``cache_ram``: as written, for people (the summary), never judged."""

    ctx: int = 0
    slots: int = 0
    kv_unified: str = ""
    model_path: str = ""
    ngl: str = ""
    cache_ram: str = ""

    def as_dict(self) -> dict:
        return {
            "ctx": self.ctx,
            "slots": self.slots,
            "kv_unified": self.kv_unified,
            "model_path": self.model_path,
            "ngl": self.ngl,
            "cache_ram": self.cache_ram,
        }


def _last_switch(argv: Sequence[str], on: Sequence[str], off: Sequence[str]) -> str:
    state = ""
    for word in argv:
        if word in on:
            state = "on"
        elif word in off:
            state = "off"
    return state


def expectations(argv: Sequence[str], gguf: GGUFInfo | None, engine_fits_itself: bool) -> Expectations:
    """The engine's context, slots and model for this argv.

    ``engine_fits_itself``: the engine runs --fit by default; with ``-c 0`` it may then open less than the
    model's training context, so the context is left unjudged.
    """
    ctx_written = parse_c_int(flag_value(argv, *CTX_FLAGS)) if has_any_flag(argv, *CTX_FLAGS) else None
    ctx = 0
    if ctx_written is not None and ctx_written > 0:
        ctx = ctx_written
    elif ctx_written == 0 and gguf is not None and gguf.context_length > 0:
        ctx = gguf.context_length
    if (ctx_written == 0 and engine_fits_itself) or has_any_flag(argv, *PER_SLOT_LIMIT):
        ctx = 0
    slots = parse_c_int(flag_value(argv, *PARALLEL_FLAGS)) or 0
    return Expectations(
        ctx=ctx,
        slots=max(slots, 0),
        kv_unified=_last_switch(argv, UNIFIED_ON, UNIFIED_OFF),
        model_path=flag_value(argv, *MODEL_FLAGS),
        ngl=flag_value(argv, *NGL_FLAGS),
        cache_ram=flag_value(argv, *CACHE_RAM_FLAGS),
    )
