"""A quantised V cache needs Flash Attention; older engines do not turn it on.

Not in Loki's spec (a deliberate addition): llama.cpp refuses a quantised V
cache without Flash Attention ("V cache quantization requires flash_attn") and
exits. Current engines default ``-fa`` to ``auto`` and enable it themselves;
older ones (llama-cpp-python 0.3.16's tree, August 2025) have ``-fa`` as an
off-by-default switch, so a preset with ``KV_TYPE=q8_0`` would crash-loop there.
On such an engine the planner adds ``--flash-attn`` when the user has not decided.
Flash Attention reorders floating-point sums; it does not change the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import flash_attn_is_switch
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import effective_kv_types

# V cache types that are not quantised (llama.cpp accepts them without Flash Attention).
_PLAIN_TYPES = frozenset({"", "f16", "f32", "bf16"})


def v_cache_flash_attn_args(
    preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts
) -> tuple[list[str], list[Note]]:
    """``-fa`` for a quantised V cache on an engine whose ``-fa`` is an off-by-default switch."""
    if not flash_attn_is_switch(facts.help):
        return [], []
    if has_any_flag(extra, "-fa", "--flash-attn") or facts.arg_env.get("LLAMA_ARG_FLASH_ATTN", ""):
        return [], []
    v_type = effective_kv_types(preset, extra, facts.arg_env)[1]
    if v_type.strip().lower() in _PLAIN_TYPES:
        return [], []
    # The long name: "-fa on" is tensor split's (spec 13.10), this is the old switch.
    return ["--flash-attn"], [
        Note(
            "fidelity.flash_attn",
            f"KV cache V={v_type}: this engine refuses a quantised V cache without Flash Attention and its -fa "
            "is off by default → --flash-attn added (same model, sums in another order); -fa in EXTRA_ARGS to "
            "decide",
        )
    ]
