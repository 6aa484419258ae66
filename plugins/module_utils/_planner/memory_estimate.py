"""How much memory one launch needs, per device, from the GGUF header and what the plan decided.

An addition of this port (the placement's input, docs/placement.md). Three parts per device, as llama.cpp's own
estimator (``llama-fit-params --fit-print on``) reports them:

* model: the tensor data (the header's tensor table, offset to offset). With every layer on the cards, the blocks
  and the output go to the cards and the input embeddings stay on the host (llama.cpp reads them on the CPU); the
  blocks are split over the cards by their free memory, as llama.cpp's layer split does.
* context: the KV cache at the planned context (one cache for every slot: its size is the context, whatever the
  slot count), K and V types as planned, layers of a sliding window holding only the window per slot plus a
  micro-batch; the recurrent state of each slot for recurrent and hybrid models.
* compute: the buffer the engine reserves for one micro-batch. Its largest part is the logits, vocabulary x
  micro-batch in f32 (512 MiB for 262,144 tokens x 512); the rest grows with the micro-batch, the embedding and
  feed-forward widths, and the attention's window (context per slot, without flash attention).

Every part is rounded up, and the compute part is given a margin: the estimate is meant never to fall short of the
engine's own projection (bench/memory_estimate.py measures both, and the engine's use once loaded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import flag_value, parse_int
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import DEFAULT_UBATCH
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import FALSEY, TRUTHY
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import state_bytes

MIB = 1 << 20
# llama.cpp pads the KV cache to 256 cells.
KV_PAD = 256
# Layers of a sliding window, one in every N is a full-attention layer (llama.cpp's set_swa_pattern per
# architecture); a model not listed here is counted with full attention everywhere (more, never less).
SWA_PATTERNS = {"gemma2": 2, "gemma3": 6, "gemma3n": 5, "cohere2": 4}
# A margin on the compute buffer, whose exact size depends on how the engine's scheduler lays out the graph
# (bench/memory_estimate.py measures the estimate against the engine's own).
COMPUTE_SLACK = 1.05


@dataclass(frozen=True)
class DeviceMemory:
    device: str  # "host", or a card's index as CUDA numbers it
    model_mib: int = 0
    context_mib: int = 0
    compute_mib: int = 0

    @property
    def total_mib(self) -> int:
        return self.model_mib + self.context_mib + self.compute_mib

    def as_dict(self) -> dict:
        return {"device": self.device, "model_mib": self.model_mib, "context_mib": self.context_mib,
                "compute_mib": self.compute_mib, "total_mib": self.total_mib}


@dataclass(frozen=True)
class MemoryEstimate:
    devices: tuple[DeviceMemory, ...] = ()
    known: bool = False  # the header said enough (tensor bytes and the attention's sizes)
    why_unknown: str = ""

    @property
    def host_mib(self) -> int:
        return sum(d.total_mib for d in self.devices if d.device == "host")

    @property
    def cards_mib(self) -> int:
        return sum(d.total_mib for d in self.devices if d.device != "host")

    def as_dict(self) -> dict:
        return {"known": self.known, "why_unknown": self.why_unknown, "host_mib": self.host_mib,
                "cards_mib": self.cards_mib, "devices": [d.as_dict() for d in self.devices]}


def _mib(n_bytes: float) -> int:
    return math.ceil(n_bytes / MIB)


def _padded(cells: int) -> int:
    return -(-cells // KV_PAD) * KV_PAD


def kv_bytes(g: GGUFInfo, ctx: int, slots: int, ubatch: int, *, k_type: str = "f16",
             v_type: str = "f16") -> tuple[float, float]:
    """(KV cache bytes, recurrent state bytes) of the whole launch."""
    slots = max(slots, 1)
    per_token, recurrent = state_bytes(g, k_type, v_type)
    if per_token == 0 or g.block_count == 0:
        return 0.0, float(recurrent * slots)
    full_cells = _padded(ctx)
    pattern = SWA_PATTERNS.get(g.arch.lower(), 0) if g.sliding_window > 0 else 0
    if not pattern:
        return per_token * full_cells, float(recurrent * slots)
    per_layer = per_token / g.block_count
    swa_layers = g.block_count - g.block_count // pattern
    # A window layer keeps the window and a micro-batch per slot (each slot its own cells; one cache shared by every
    # slot keeps no more than that).
    swa_cells = slots * min(_padded(-(-ctx // slots)), _padded(g.sliding_window + ubatch))
    total = per_layer * ((g.block_count - swa_layers) * full_cells + swa_layers * min(full_cells, swa_cells))
    return total, float(recurrent * slots)


def compute_bytes(g: GGUFInfo, ctx: int, slots: int, ubatch: int, flash_attn: bool) -> float:
    """The compute buffer of one micro-batch: the logits, one layer's activations, and the attention's mask (f16)
    and, without flash attention, its scores (f32, every head) over a slot's context."""
    logits = g.vocab_size * ubatch * 4
    width = max(g.embedding_length, 1)
    hidden = max(g.feed_forward_length, 4 * width)
    activations = ubatch * (4 * width + 3 * hidden) * 4
    window = _padded(-(-ctx // max(slots, 1)))
    attention = ubatch * window * 2
    if not flash_attn:
        attention += max(g.head_count, 1) * ubatch * window * 4
    return (logits + activations + attention) * COMPUTE_SLACK


def estimate(g: GGUFInfo | None, *, ctx: int, slots: int, ubatch: int, k_type: str = "f16", v_type: str = "f16",
             card_free_mib: tuple[int, ...] = (), flash_attn: bool = False, extra_model_bytes: int = 0
             ) -> MemoryEstimate:
    """The memory of one launch per device. ``card_free_mib``: the free memory of the cards every layer goes to
    (empty: the host holds everything, as on a CPU engine); ``extra_model_bytes``: a projector or a draft model."""
    if g is None or not g.layer_bytes or g.vocab_size == 0:
        return MemoryEstimate(why_unknown="the model's header gave no tensor table or vocabulary")
    if ctx <= 0:
        return MemoryEstimate(why_unknown="the context is not known")
    kv, recurrent = kv_bytes(g, ctx, slots, ubatch, k_type=k_type, v_type=v_type)
    compute = compute_bytes(g, ctx, slots, ubatch, flash_attn)
    blocks = sum(g.layer_bytes)
    if not card_free_mib:
        host = DeviceMemory("host", _mib(blocks + g.embed_bytes + g.other_bytes + extra_model_bytes),
                            _mib(kv + recurrent), _mib(compute))
        return MemoryEstimate(devices=(host,), known=True)
    # Every layer on the cards, split by their free memory; the output and the projector on the last card; the
    # input embeddings and a micro-batch's input on the host.
    total_free = sum(card_free_mib) or len(card_free_mib)
    shares = [(free or 1) / total_free for free in card_free_mib]
    cards = []
    for index, share in enumerate(shares):
        last = index == len(shares) - 1
        model = blocks * share + (g.other_bytes + extra_model_bytes if last else 0)
        cards.append(DeviceMemory(str(index), _mib(model), _mib((kv + recurrent) * share), _mib(compute)))
    host = DeviceMemory("host", _mib(g.embed_bytes), 0, _mib(ubatch * max(g.embedding_length, 1) * 4 * 2))
    return MemoryEstimate(devices=(*cards, host), known=True)


def _flash_attention(argv: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    """Is flash attention on for this launch? ``auto`` counts as on: llama.cpp turns it on wherever the backend
    has it (CPU and CUDA), and off it would only add the scores."""
    words = list(argv[1:])
    value = flag_value(words, "-fa", "--flash-attn")
    if value.startswith("-") or (not value and any(word in ("-fa", "--flash-attn") for word in words)):
        return True  # an older engine's bare switch
    value = value or arg_env.get("LLAMA_ARG_FLASH_ATTN", "auto")
    return value in (*TRUTHY, "auto") and value not in FALSEY


def for_plan(argv: Sequence[str], facts: HostFacts, *, ctx: int, slots: int, k_type: str, v_type: str,
             cards: int) -> MemoryEstimate:
    """The estimate of a planned launch: its argv's micro-batch and flash attention, the context and slots the
    engine will open (0 = the model's own context, one slot), its K and V types, the projector and the draft model;
    ``cards``: how many cards take every layer (0 = the host)."""
    g = facts.gguf
    ubatch = parse_int(flag_value(argv[1:], "-ub", "--ubatch-size")) or DEFAULT_UBATCH
    ctx = ctx or (g.context_length if g is not None else 0)
    draft = facts.draft_gguf
    extra = facts.mmproj_bytes + (sum(draft.layer_bytes) + draft.embed_bytes + draft.other_bytes if draft else 0)
    return estimate(g, ctx=ctx, slots=max(slots, 1), ubatch=max(ubatch, 1), k_type=k_type or "f16",
                    v_type=v_type or "f16", card_free_mib=(1,) * cards,
                    flash_attn=_flash_attention(argv, facts.arg_env), extra_model_bytes=extra)
