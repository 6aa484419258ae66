"""Spec section 12.5: per-token KV bytes and recurrent state."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import (
    MIB,
    ceil_mib,
    is_hybrid,
    kv_type_bytes,
    state_bytes,
)


@pytest.mark.parametrize(
    ("kv_type", "size"),
    [("f32", 4), ("F32", 4), ("q8_0", 34 / 32), (" q5_1 ", 24 / 32), ("q5_0", 22 / 32), ("q4_1", 20 / 32),
     ("q4_0", 18 / 32), ("iq4_nl", 18 / 32), ("f16", 2), ("bf16", 2), ("", 2), ("weird", 2)],
)
def test_kv_type_bytes(kv_type, size):
    assert kv_type_bytes(kv_type) == size


DENSE = GGUFInfo(block_count=32, key_len=128, val_len=128, head_count_kv=8)


@pytest.mark.parametrize(
    ("g", "k", "v", "per_token", "recurrent"),
    [
        pytest.param(DENSE, "", "", 32 * 8 * (128 * 2 + 128 * 2), 0, id="dense-f16"),
        pytest.param(DENSE, "q8_0", "q4_0", 32 * 8 * (128 * 34 / 32 + 128 * 18 / 32), 0, id="dense-quant"),
        pytest.param(GGUFInfo(block_count=4, embedding_length=1024, head_count=8, head_count_kv=2), "", "",
                     4 * 2 * (128 * 2 + 128 * 2), 0, id="fallback-embedding-over-heads"),
        pytest.param(GGUFInfo(block_count=4, key_len=0, val_len=64, head_count_kv=2), "", "", 0, 0,
                     id="unknown-key-len"),
        pytest.param(GGUFInfo(key_len=64, val_len=64, head_count_kv=2), "", "", 0, 0, id="no-blocks"),
        pytest.param(GGUFInfo(block_count=4, key_len=64, val_len=64, head_count_kv_layers=(2, 0, 2, 4),
                              hybrid=True, ssm_conv=4, ssm_inner=256, ssm_state=16, ssm_groups=1),
                     "", "", 8 * (64 * 2 + 64 * 2), 1 * (3 * (256 + 2 * 1 * 16) + 16 * 256) * 4,
                     id="per-layer-array-hybrid"),
        pytest.param(GGUFInfo(block_count=4, key_len=64, val_len=64, head_count_kv_layers=(2, 0, 2, 4)),
                     "", "", 8 * (64 * 2 + 64 * 2), 0, id="per-layer-array-dense"),
        pytest.param(GGUFInfo(block_count=48, key_len=256, val_len=256, head_count_kv=2, hybrid=True,
                              full_attn_interval=4, ssm_conv=4, ssm_inner=4096, ssm_state=128, ssm_groups=16),
                     "", "", 12 * 2 * (256 * 2 + 256 * 2), 36 * (3 * (4096 + 2 * 16 * 128) + 128 * 4096) * 4,
                     id="hybrid-interval"),
        pytest.param(GGUFInfo(block_count=24, key_len=64, val_len=64, hybrid=True, ssm_conv=1, ssm_inner=10,
                              ssm_state=2), "", "", 0, 24 * (0 + 2 * 10) * 4, id="pure-recurrent-conv-1"),
    ],
)
def test_state_bytes(g, k, v, per_token, recurrent):
    got_per_token, got_recurrent = state_bytes(g, k, v)
    assert got_per_token == pytest.approx(per_token)
    assert got_recurrent == recurrent


@pytest.mark.parametrize(
    ("g", "hybrid"),
    [(None, False), (GGUFInfo(), False), (GGUFInfo(hybrid=True), True), (GGUFInfo(arch="qwen3next"), True),
     (GGUFInfo(arch="qwen35moe"), True), (GGUFInfo(arch="llama"), False)],
)
def test_is_hybrid(g, hybrid):
    assert is_hybrid(g) is hybrid


@pytest.mark.parametrize(("n", "mib"), [(0, 0), (1, 1), (MIB, 1), (MIB + 1, 2), (2.5 * MIB, 3), (MIB - 0.5, 1)])
def test_ceil_mib(n, mib):
    assert ceil_mib(n) == mib
