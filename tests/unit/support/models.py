"""GGUF metadata of reference models shared by the planner tests (hand-chosen, numbers worked out below)."""

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo

# Dense 32-layer model: 32 layers × 8 KV heads × (128 × 2 + 128 × 2) B = 131072 B (1/8 MiB) of f16 KV per token.
DENSE_32 = GGUFInfo(
    arch="llama",
    block_count=32,
    key_len=128,
    val_len=128,
    head_count=32,
    head_count_kv=8,
    embedding_length=4096,
    context_length=131072,
)

# Hybrid: 64 blocks, one attention layer in 4 -> 16 attention layers × 4 heads
# = 64 heads × (256 × 2 + 256 × 2) = 65536 B/token; 48 recurrent layers ×
# (conv 3 × (4096 + 2 × 16 × 128) + 128 × 4096) × 4 B = 105381888 B = 100.5 MiB.
HYBRID_64 = GGUFInfo(
    arch="qwen35",
    block_count=64,
    key_len=256,
    val_len=256,
    head_count_kv=4,
    hybrid=True,
    full_attn_interval=4,
    ssm_conv=4,
    ssm_inner=4096,
    ssm_state=128,
    ssm_groups=16,
)

# Hybrid: 48 blocks, attention every 4th -> 12 attention layers (4 KV heads each = 48 heads) and 36 recurrent
# layers. KV per token (f16): 48 × (256 × 2 + 256 × 2) = 49152 B. Recurrent state (f32):
# 36 × ((4 - 1) × (4096 + 2 × 16 × 128) + 128 × 4096) × 4 = 79036416 B = 75.375 MiB.
HYBRID_48 = GGUFInfo(
    arch="qwen35",
    block_count=48,
    head_count_kv=4,
    key_len=256,
    val_len=256,
    full_attn_interval=4,
    hybrid=True,
    ssm_conv=4,
    ssm_inner=4096,
    ssm_state=128,
    ssm_groups=16,
    context_length=262144,
)
