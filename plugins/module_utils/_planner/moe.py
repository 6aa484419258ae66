"""Advice on where a mixture-of-experts model's experts end up (spec 14.1).

Notes only: this never adds, removes or rewrites a flag. It answers, for one
launch, whether the user placed experts by hand (then --fit leaves them
alone), whether the model is larger than the VRAM (then --fit leaves experts
in RAM and a small UBATCH copies them to the GPU far too often), and whether
something keeps --fit from running at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import is_external
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import flag_value, parse_int
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import supports_fit
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import serve_ubatch
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note, gib_text
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import (
    NGL_FLAGS,
    NGL_SENTINEL,
    TENSOR_OVERRIDE,
    cpu_experts,
    fit_blocker,
)

# Margin per card --fit keeps free (the FIT_TARGET minimum): a model within
# VRAM minus this margin fits entirely on the GPUs.
FIT_MARGIN_MIB_PER_CARD = 1024
# At or below this micro-batch, experts left in RAM are re-copied so often
# that prefill suffers; 2048 pays that copy four times less.
SMALL_UBATCH = 512


def _small_ubatch(ubatch: int) -> bool:
    # 0 means "unreadable", not small.
    return 0 < ubatch <= SMALL_UBATCH


def _partial_offload_chosen(preset: Mapping[str, str], extra: Sequence[str]) -> bool:
    """NGL written as a number below the 999 sentinel: layers (and experts) already on CPU."""
    written = next((v for v in (flag_value(extra, *NGL_FLAGS), preset.get("NGL", "")) if v.strip()), "")
    layers = parse_int(written.strip())
    return layers is not None and layers < int(NGL_SENTINEL)


def moe_notes(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> list[Note]:
    """What to know about MoE expert placement for this launch (first match wins)."""
    gguf = facts.gguf
    if is_external(preset) or gguf is None or gguf.expert_count <= 0:
        return []
    ubatch = serve_ubatch(preset, extra)

    manual = cpu_experts(extra, facts.arg_env)
    if manual:
        text = f"experts placed by hand ({manual}): --fit does not place them"
        if _small_ubatch(ubatch):
            # Raising UBATCH alone grows the compute buffer on every card with
            # nobody to rebalance: a cudaMalloc failure waiting to happen.
            text += (
                "; a larger UBATCH means a larger compute buffer on every GPU: raise --n-cpu-moe first, "
                "or switch to automatic placement (--fit)"
            )
        return [Note("moe.manual", text)]

    model_mib = facts.model_bytes >> 20
    if model_mib <= 0 or facts.vram_mib <= 0 or facts.unified_mem or not facts.help.strip():
        return []
    cards = max(facts.gpus, 1)
    if model_mib <= facts.vram_mib - FIT_MARGIN_MIB_PER_CARD * cards:
        return []  # everything fits on the GPUs: no expert is copied back and forth
    sizes = f"model {gib_text(model_mib)}, VRAM {gib_text(facts.vram_mib)}"

    if not supports_fit(facts.help):
        if _partial_offload_chosen(preset, extra):
            return []
        return [
            Note(
                "moe.nofit",
                f"MoE larger than the VRAM ({sizes}): this engine does not place experts (no --fit) — keep --n-cpu-moe",
            )
        ]

    blocker = fit_blocker(preset, extra, facts)
    if blocker:
        if blocker == TENSOR_OVERRIDE:
            # An -ot that does not target experts (e.g. per_layer_token_embd=CPU)
            # still switches --fit off, so nothing moves the experts off the GPU.
            return [
                Note(
                    "moe.ot_blocks_fit",
                    f"MoE larger than the VRAM ({sizes}) and --fit switched off by an -ot that does not target "
                    "the experts: nothing moves them off the GPU — use --n-cpu-moe, or remove that -ot",
                )
            ]
        return []

    if _small_ubatch(ubatch):
        return [
            Note(
                "moe.ubatch",
                f"UBATCH 2048+ recommended: --fit leaves experts in RAM ({sizes}), copied to the GPU at every "
                "prefill micro-batch; BATCH 4096 along with it — measure it (full bench)",
            )
        ]
    return []
