"""Spec section 14.1: MoE expert placement advice (notes only)."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.moe import moe_notes
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import split_args
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE

GIB = 1 << 30
MOE = GGUFInfo(arch="qwen3moe", block_count=48, expert_count=128)
DENSE = GGUFInfo(arch="llama", block_count=32, expert_count=0)

# A 60 GiB MoE on one 24 GiB card: does not fit, --fit would leave experts in RAM.
BIG = HostFacts(help=NEW_ENGINE, gguf=MOE, model_bytes=60 * GIB, vram_mib=24576, gpus=1)
SIZES = "model 60.0 GiB, VRAM 24.0 GiB"

MANUAL = "--fit does not place them"
MANUAL_UB = (
    "; a larger UBATCH means a larger compute buffer on every GPU: raise --n-cpu-moe first, "
    "or switch to automatic placement (--fit)"
)


def notes_for(preset=None, extra="", **changes):
    facts = dataclasses.replace(BIG, **changes)
    return moe_notes(preset or {}, split_args(extra), facts)


def only(notes):
    assert len(notes) == 1, notes
    return notes[0]


# --- silent before anything is looked at ---------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "extra", "changes"),
    [
        ({}, "", {"gguf": DENSE}),
        ({}, "--n-cpu-moe 20", {"gguf": DENSE}),
        ({}, "", {"gguf": None}),
        ({}, "--cpu-moe", {"gguf": None}),
        ({"EXTERNAL": "1"}, "--cpu-moe", {}),
        ({"EXTERNAL": " 1 "}, "", {}),
        ({}, "", {"gguf": GGUFInfo(expert_count=-1)}),
    ],
    ids=["dense", "dense-with-ncmoe", "unknown-gguf", "unknown-gguf-manual", "external", "external-trimmed", "neg"],
)
def test_silent_without_a_known_moe(preset, extra, changes):
    assert notes_for(preset, extra, **changes) == []


# --- 1. manual expert placement ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "extra", "arg_env", "reason"),
    [
        ({}, "-ot blk\\..*_exps\\.=CPU", {}, "-ot experts=CPU"),
        ({}, "--override-tensor ffn_.*_EXPS=cpu_repack", {}, "-ot experts=CPU"),
        ({}, "--cpu-moe", {}, "--cpu-moe"),
        ({}, "-cmoe", {}, "--cpu-moe"),
        ({}, "--n-cpu-moe 20", {}, "--n-cpu-moe 20"),
        ({}, "-ncmoe=12", {}, "--n-cpu-moe 12"),
        ({}, "--n-cpu-moe 0", {"LLAMA_ARG_N_CPU_MOE": "30"}, "--n-cpu-moe 30"),
        ({}, "", {"LLAMA_ARG_OVERRIDE_TENSOR": "exps=CPU"}, "-ot experts=CPU"),
        ({}, "", {"LLAMA_ARG_CPU_MOE": "true"}, "--cpu-moe"),
    ],
    ids=["ot", "ot-long-repack", "cpu-moe", "cmoe", "n-cpu-moe", "ncmoe-eq", "env-ncmoe", "env-ot", "env-cpu-moe"],
)
def test_manual_experts_name_their_placement(preset, extra, arg_env, reason):
    note = only(notes_for(preset, extra, arg_env=arg_env))
    assert note.id == "moe.manual"
    assert note.text == f"experts placed by hand ({reason}): {MANUAL}{MANUAL_UB}"


@pytest.mark.parametrize(
    ("preset", "extra", "ubatch_advice"),
    [
        ({}, "--n-cpu-moe 20", True),
        ({"UBATCH": "512"}, "--n-cpu-moe 20", True),
        ({"UBATCH": "256"}, "--n-cpu-moe 20", True),
        ({"UBATCH": "2048"}, "--n-cpu-moe 20", False),
        ({}, "--n-cpu-moe 20 -ub 2048", False),
        ({"UBATCH": "4096"}, "--n-cpu-moe 20 -ub 512", True),
        ({"UBATCH": "513"}, "--n-cpu-moe 20", False),
        ({"UBATCH": "0"}, "--n-cpu-moe 20", False),
        ({"UBATCH": "big"}, "--n-cpu-moe 20", False),
    ],
    ids=["default-512", "ub-512", "ub-256", "ub-2048", "extra-ub-2048", "extra-ub-512", "ub-513", "ub-0", "ub-text"],
)
def test_manual_experts_ubatch_advice(preset, extra, ubatch_advice):
    note = only(notes_for(preset, extra))
    assert note.text.endswith(MANUAL_UB) is ubatch_advice
    assert note.text.startswith("experts placed by hand (--n-cpu-moe 20)")


def test_manual_experts_speak_even_without_sizes_or_help():
    note = only(notes_for({}, "--cpu-moe", help="", model_bytes=0, vram_mib=0, unified_mem=True))
    assert note.id == "moe.manual"


def test_ot_not_on_experts_is_not_manual_placement():
    note = only(notes_for({}, "-ot per_layer_token_embd.weight=CPU"))
    assert note.id == "moe.ot_blocks_fit"


def test_ot_experts_to_another_gpu_is_not_manual_placement():
    # Experts pinned to a GPU are not in RAM; the -ot still switches --fit off.
    note = only(notes_for({}, "-ot exps=CUDA1"))
    assert note.id == "moe.ot_blocks_fit"


# --- 2./3. sizes unknown, or everything fits -----------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"model_bytes": 0},
        {"model_bytes": (1 << 20) - 1},
        {"vram_mib": 0},
        {"unified_mem": True},
        {"help": ""},
        {"help": "   \n"},
    ],
    ids=["model-unknown", "model-under-1mib", "vram-unknown", "unified-mem", "help-empty", "help-blank"],
)
def test_silent_when_sizes_or_engine_unknown(changes):
    assert notes_for(**changes) == []


@pytest.mark.parametrize(
    ("model_mib", "vram_mib", "gpus", "silent"),
    [
        (23552, 24576, 1, True),
        (23553, 24576, 1, False),
        (47104, 49152, 2, True),
        (47105, 49152, 2, False),
        (23552, 24576, 0, True),
        (23553, 24576, 0, False),
        (20480, 24576, 4, True),
        (20481, 24576, 4, False),
    ],
    ids=[
        "fits-one-card",
        "one-mib-over",
        "fits-two-cards",
        "two-cards-over",
        "gpus-unknown",
        "gpus-unknown-over",
        "four-cards-fit",
        "four-cards-over",
    ],
)
def test_fits_on_gpu_margin_per_card(model_mib, vram_mib, gpus, silent):
    notes = notes_for(model_bytes=model_mib << 20, vram_mib=vram_mib, gpus=gpus)
    assert (notes == []) is silent
    if not silent:
        assert only(notes).id == "moe.ubatch"


# --- 4. engine without --fit ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "extra", "note"),
    [
        ({"NGL": "20"}, "", False),
        ({"NGL": " 20 "}, "", False),
        ({"NGL": "-1"}, "", False),
        ({"NGL": "998"}, "", False),
        ({}, "-ngl 20", False),
        ({"NGL": "999"}, "--n-gpu-layers=30", False),
        ({"NGL": "20"}, "--gpu-layers 999", True),
        ({}, "", True),
        ({"NGL": ""}, "", True),
        ({"NGL": "999"}, "", True),
        ({"NGL": "all"}, "", True),
        ({"NGL": "auto"}, "", True),
        ({"NGL": "20"}, "-ngl all", True),
        ({"NGL": "20"}, "-ngl ' '", False),
    ],
    ids=[
        "ngl-20",
        "ngl-20-spaces",
        "ngl-negative",
        "ngl-998",
        "extra-ngl-20",
        "extra-ngl-beats-999",
        "extra-999-beats-20",
        "ngl-absent",
        "ngl-empty",
        "ngl-999",
        "ngl-all",
        "ngl-auto",
        "extra-all-beats-20",
        "extra-blank-falls-back",
    ],
)
def test_engine_without_fit(preset, extra, note):
    notes = notes_for(preset, extra, help=OLD_ENGINE)
    if not note:
        assert notes == []
        return
    assert only(notes).id == "moe.nofit"
    assert only(notes).text == (
        f"MoE larger than the VRAM ({SIZES}): this engine does not place experts (no --fit) — keep --n-cpu-moe"
    )


# --- 5. --fit blocked ----------------------------------------------------------------------------


def test_ot_not_targeting_experts_blocks_fit_note():
    note = only(notes_for({}, "-ot per_layer_token_embd.weight=CPU"))
    assert note.text == (
        f"MoE larger than the VRAM ({SIZES}) and --fit switched off by an -ot that does not target the experts: "
        "nothing moves them off the GPU — use --n-cpu-moe, or remove that -ot"
    )


@pytest.mark.parametrize(
    ("preset", "extra", "arg_env"),
    [
        ({}, "", {"LLAMA_ARG_OVERRIDE_TENSOR": "per_layer_token_embd.weight=CPU"}),
        ({"UBATCH": "4096"}, "-ot token_embd=CPU", {}),
    ],
    ids=["env-ot", "ot-with-big-ubatch"],
)
def test_ot_blocks_fit_from_any_source(preset, extra, arg_env):
    assert only(notes_for(preset, extra, arg_env=arg_env)).id == "moe.ot_blocks_fit"


@pytest.mark.parametrize(
    ("preset", "extra", "arg_env"),
    [
        ({"NGL": "20"}, "", {}),
        ({}, "-ngl 30", {}),
        ({}, "--fit off", {}),
        ({}, "", {"LLAMA_ARG_FIT": "off"}),
        ({}, "-ts 1,1", {}),
        ({}, "-sm row", {}),
        ({}, "--n-cpu-ffn 4", {}),
    ],
    ids=["ngl-fixed", "extra-ngl-fixed", "fit-off", "env-fit-off", "tensor-split", "split-row", "n-cpu-ffn"],
)
def test_other_fit_blockers_are_silent(preset, extra, arg_env):
    assert notes_for(preset, extra, arg_env=arg_env) == []


# --- 6. UBATCH advice under --fit ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "extra", "note"),
    [
        ({}, "", True),
        ({"UBATCH": "512"}, "", True),
        ({"UBATCH": "1"}, "", True),
        ({"UBATCH": "513"}, "", False),
        ({"UBATCH": "2048"}, "", False),
        ({"UBATCH": "4096"}, "", False),
        ({"UBATCH": "4096"}, "-ub 256", True),
        ({"UBATCH": "256"}, "--ubatch-size=4096", False),
        ({"UBATCH": "0"}, "", False),
        ({"UBATCH": "-512"}, "", False),
        ({"UBATCH": "lots"}, "", False),
        ({"NGL": "999"}, "", True),
        ({"NGL": "auto"}, "", True),
    ],
    ids=[
        "default-512",
        "ub-512",
        "ub-1",
        "ub-513",
        "ub-2048",
        "ub-4096",
        "extra-ub-256",
        "extra-ub-4096",
        "ub-0",
        "ub-negative",
        "ub-text",
        "ngl-999-becomes-auto",
        "ngl-auto",
    ],
)
def test_ubatch_advice(preset, extra, note):
    notes = notes_for(preset, extra)
    if not note:
        assert notes == []
        return
    assert only(notes).id == "moe.ubatch"
    assert only(notes).text == (
        f"UBATCH 2048+ recommended: --fit leaves experts in RAM ({SIZES}), copied to the GPU at every prefill "
        "micro-batch; BATCH 4096 along with it — measure it (full bench)"
    )


def test_unified_memory_is_silent_even_with_small_ubatch():
    assert notes_for({"UBATCH": "256"}, unified_mem=True, vram_mib=0) == []
    assert notes_for({"UBATCH": "256"}, unified_mem=True) == []


def test_sizes_use_model_bytes_shifted_to_mib():
    # 40 GiB + 1023 KiB: the partial MiB is dropped before formatting.
    note = only(notes_for(model_bytes=40 * GIB + 1023 * 1024, vram_mib=16384))
    assert "(model 40.0 GiB, VRAM 16.0 GiB)" in note.text
