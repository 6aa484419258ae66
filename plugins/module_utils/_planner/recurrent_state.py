"""Size of one sequence's state: KV cache per token and recurrent state.

Spec section 12.5. Used by the prompt-cache sizing, the side slot, tensor
split and checkpoint rules.
"""

from __future__ import annotations

import math

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo

MIB = 1 << 20

# Bytes per element; quantised ggml types come in blocks of 32.
_KV_TYPE_BYTES = {
    "f32": 4.0,
    "q8_0": 34 / 32,
    "q5_1": 24 / 32,
    "q5_0": 22 / 32,
    "q4_1": 20 / 32,
    "q4_0": 18 / 32,
    "iq4_nl": 18 / 32,
}

# Architectures llama.cpp treats as hybrid even when no ssm.* key is present.
HYBRID_ARCHS = frozenset({"qwen35", "qwen35moe", "qwen3next", "qwen4exp"})


def kv_type_bytes(kv_type: str) -> float:
    """Bytes per KV element; f16, bf16, empty and unknown types count 2."""
    return _KV_TYPE_BYTES.get(kv_type.strip().lower(), 2.0)


def state_bytes(g: GGUFInfo, k_type: str, v_type: str) -> tuple[float, int]:
    """(KV bytes per token, recurrent state bytes) of one sequence; 0 = unknown."""
    kl, vl = g.key_len, g.val_len
    if g.embedding_length > 0 and g.head_count > 0:
        # llama.cpp's fallback when the GGUF omits the per-head lengths.
        kl = kl or g.embedding_length // g.head_count
        vl = vl or g.embedding_length // g.head_count
    if kl == 0 or vl == 0 or g.block_count == 0:
        return 0.0, 0
    rec_layers = 0
    if g.head_count_kv_layers:
        heads = sum(g.head_count_kv_layers)
        if g.hybrid:
            rec_layers = sum(1 for h in g.head_count_kv_layers if h == 0)
    elif g.hybrid and g.full_attn_interval > 0:
        attn = g.block_count // g.full_attn_interval
        heads, rec_layers = attn * g.head_count_kv, g.block_count - attn
    else:
        heads = g.block_count * g.head_count_kv
        if heads == 0 and g.hybrid:
            rec_layers = g.block_count  # purely recurrent model
    per_token = heads * (kl * kv_type_bytes(k_type) + vl * kv_type_bytes(v_type))
    recurrent = 0
    if rec_layers > 0:
        conv = 0
        if g.ssm_conv > 1:
            conv = (g.ssm_conv - 1) * (g.ssm_inner + 2 * g.ssm_groups * g.ssm_state)
        recurrent = rec_layers * (conv + g.ssm_state * g.ssm_inner) * 4
    return float(per_token), recurrent


def is_hybrid(g: GGUFInfo | None) -> bool:
    """Hybrid attention/recurrent model, from metadata only (never the file name)."""
    return g is not None and (g.hybrid or g.arch.strip().lower() in HYBRID_ARCHS)


def ceil_mib(n_bytes: float) -> int:
    """Bytes -> MiB rounded up."""
    return math.ceil(n_bytes / MIB)
