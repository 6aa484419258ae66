"""Spec section 13.10: SPLIT_MODE=tensor (tensor parallelism across CUDA cards).

Reference machine: a dense 32-layer model of 8 GiB on two CUDA cards of
16311 and 12288 MiB (28599 MiB in all, 90 % = 25739.1 MiB).

KV bytes per token (f16): 32 layers × 8 KV heads × (128 × 2 + 128 × 2) =
131072 B = 1/8 MiB, so CTX=65536 costs 8192 MiB and the launch needs
8192 + 8192 = 16384 MiB.
"""

from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts, SplitDev
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.tensor_split import (
    SPLIT_DENY_ARCHS,
    SplitPlan,
    split_plan,
    tensor_split_percentages,
)
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE
from tests.unit.support.ladder import ladder_inputs
from tests.unit.support.models import DENSE_32, HYBRID_64

GIB = 1 << 30
MIB = 1 << 20

# A help that mentions "tensor" only through --tensor-split and --override-tensor.
HELP_TENSOR_WORD_ONLY = """\
-ts,   --tensor-split N0,N1,N2,...      fraction of the model to offload to each GPU
-ot,   --override-tensor <tensor name pattern>=<buffer type>,...
-sm,   --split-mode {none,layer,row}    how to split the model across multiple GPUs
"""
HELP_TENSOR_LIST = HELP_TENSOR_WORD_ONLY + "-sm,   --split-mode {none,layer,row,tensor}\n"

DENSE = DENSE_32
HYBRID = HYBRID_64
TWO_CARDS = (SplitDev("CUDA0", 16311), SplitDev("CUDA1", 12288))

BASE_PRESET = {"SPLIT_MODE": "tensor", "CTX": "65536"}


def make_facts(**changes) -> HostFacts:
    base = HostFacts(
        help=NEW_ENGINE,
        model="/models/dense.gguf",
        gguf=DENSE,
        model_bytes=8 * GIB,
        split_devs=TWO_CARDS,
    )
    return dataclasses.replace(base, **changes)


def preset_with(**changes: str) -> dict[str, str]:
    return {**BASE_PRESET, **changes}


def refused(why: str) -> SplitPlan:
    """What a refusal returns: nothing on, one note."""
    return SplitPlan(
        notes=[Note("split.refused", f"SPLIT_MODE=tensor refused ({why}): layer split, as without the key")]
    )


# --------------------------------------------------------------------------- percentages


@pytest.mark.parametrize(
    ("totals", "expected"),
    [
        pytest.param([16311, 12288], [57, 43], id="spec-example"),
        pytest.param([12288, 16311], [43, 57], id="reversed"),
        pytest.param([24576, 24576, 12288], [40, 40, 20], id="three-cards"),
        pytest.param([1, 7], [13, 88], id="halves-round-up"),
        pytest.param([3, 5], [38, 63], id="halves-round-up-both"),
        pytest.param([24576], [100], id="one-card"),
        pytest.param([], [], id="no-card"),
        pytest.param([0, 0], [], id="zero-total"),
    ],
)
def test_tensor_split_percentages(totals, expected):
    assert tensor_split_percentages(totals) == expected


# --------------------------------------------------------------------------- silent


@pytest.mark.parametrize(
    "value",
    [None, "", "off", "OFF", " layer ", "Layer", "non", "no", "0"],
    ids=repr,
)
def test_split_mode_off_words_are_silent(value):
    preset = {"CTX": "65536"} if value is None else preset_with(SPLIT_MODE=value)
    assert split_plan(preset, [], make_facts()) == SplitPlan()


# --------------------------------------------------------------------------- acceptance


def test_accepted_reference_machine():
    plan = split_plan(BASE_PRESET, [], make_facts())
    assert plan.on is True
    assert plan.args == ["-sm", "tensor", "-ts", "57,43", "-fa", "on"]
    assert plan.ngl_args == ["-ngl", "all"]
    assert plan.env == {"GGML_CUDA_ALLREDUCE": "internal"}
    assert len(plan.notes) == 1
    note = plan.notes[0]
    assert note.id == "split.accepted"
    assert note.text.startswith(
        "SPLIT_MODE=tensor (experimental): -sm tensor on 2 cards, -ts 57,43 (total VRAM), "
        "~16384 MiB estimated without --fit; GGML_CUDA_ALLREDUCE=internal"
    )
    assert "NCCL would compress partial sums to BF16 above 32768 elements" in note.text
    assert "hybrid" not in note.text


@pytest.mark.parametrize(
    ("preset", "extra", "changes", "need_mib"),
    [
        pytest.param(BASE_PRESET, [], {}, 16384, id="ctx-65536"),
        pytest.param(preset_with(CTX="131072"), [], {}, 8192 + 16384, id="ctx-131072"),
        pytest.param(BASE_PRESET, ["-c", "4096"], {}, 8192 + 512, id="extra-ctx-wins"),
        pytest.param(preset_with(KV_TYPE="f32"), [], {}, 8192 + 16384, id="f32-cache-doubles"),
        pytest.param(preset_with(KV_TYPE="bf16"), [], {}, 16384, id="bf16-cache"),
        pytest.param(BASE_PRESET, ["-ctk", "F32"], {}, 8192 + 12288, id="extra-f32-k-only"),
        pytest.param(BASE_PRESET, [], {"mmproj": "/m/mm.gguf", "mmproj_bytes": GIB}, 17408, id="mmproj-counted"),
        pytest.param(BASE_PRESET, [], {"mmproj_bytes": MIB + 1}, 16386, id="need-rounded-up"),
    ],
)
def test_accepted_vram_estimate(preset, extra, changes, need_mib):
    plan = split_plan(preset, extra, make_facts(**changes))
    assert plan.on, plan.notes
    assert f"~{need_mib} MiB estimated without --fit" in plan.notes[0].text


def test_accepted_hybrid_model_counts_recurrent_state_and_says_so():
    # 16 GiB + 65536 tokens × 65536 B (4096 MiB) + 100.5 MiB recurrent = 20580.5 -> 20581.
    plan = split_plan(BASE_PRESET, [], make_facts(gguf=HYBRID, model_bytes=16 * GIB))
    assert plan.on
    text = plan.notes[0].text
    assert "~20581 MiB estimated without --fit" in text
    assert text.endswith(" ; hybrid model: recurrent state and checkpoints split across cards, not validated upstream")


def test_vram_boundary_is_strictly_greater():
    # 8192 MiB weights + 81920 tokens × 1/8 MiB = 18432 MiB = exactly 90 % of 20480 MiB.
    cards = (SplitDev("CUDA0", 10240), SplitDev("CUDA1", 10240))
    preset = preset_with(CTX="81920")
    at_limit = split_plan(preset, [], make_facts(split_devs=cards))
    assert at_limit.on
    assert "-ts 50,50" in at_limit.notes[0].text
    one_byte_over = split_plan(preset, [], make_facts(split_devs=cards, mmproj_bytes=1))
    assert one_byte_over == refused(
        "not enough VRAM without --fit: ~18433 MiB (weights + cache of 81920 tokens) for 20480 MiB on 2 cards "
        "— CTX is never reduced automatically"
    )


@pytest.mark.parametrize(
    ("value"),
    ["tensor", "Tensor", " TENSOR "],
)
def test_tensor_key_is_case_insensitive(value):
    assert split_plan(preset_with(SPLIT_MODE=value), [], make_facts()).on


# --------------------------------------------------------------------------- devices


@pytest.mark.parametrize(
    ("extra", "arg_env", "devs", "ts"),
    [
        pytest.param([], {}, TWO_CARDS, "57,43", id="engine-order"),
        pytest.param(["--device", "CUDA1,CUDA0"], {}, TWO_CARDS, "43,57", id="device-order-reverses-ts"),
        pytest.param(["-dev=cuda1, cuda0"], {}, TWO_CARDS, "43,57", id="case-insensitive-trimmed"),
        pytest.param([], {"LLAMA_ARG_DEVICE": " CUDA1,CUDA0 "}, TWO_CARDS, "43,57", id="env-selection"),
        pytest.param(["-dev", "CUDA0,CUDA1"], {"LLAMA_ARG_DEVICE": "CUDA1"}, TWO_CARDS, "57,43", id="extra-beats-env"),
        pytest.param(
            [],
            {},
            (SplitDev("CUDA0", 24576), SplitDev("CUDA1", 24576), SplitDev("CUDA2", 12288)),
            "40,40,20",
            id="three-cuda-cards",
        ),
        pytest.param(
            ["-dev", "CUDA0,CUDA1"],
            {},
            (SplitDev("CUDA0", 16311), SplitDev("Vulkan0", 16311), SplitDev("CUDA1", 12288)),
            "57,43",
            id="vulkan-left-out-by-selection",
        ),
    ],
)
def test_device_selection(extra, arg_env, devs, ts):
    plan = split_plan(BASE_PRESET, extra, make_facts(split_devs=devs, arg_env=arg_env))
    assert plan.on, plan.notes
    assert plan.args == ["-sm", "tensor", "-ts", ts, "-fa", "on"]
    assert f"-sm tensor on {len(ts.split(','))} cards, -ts {ts} (total VRAM)" in plan.notes[0].text


@pytest.mark.parametrize(
    ("extra", "arg_env", "devs", "why"),
    [
        pytest.param([], {}, (), "cards unknown (--list-devices returned nothing)", id="no-list"),
        pytest.param([], {}, (SplitDev("CUDA0", 24576),), "a single card", id="one-cuda-card"),
        pytest.param(["--device", "CUDA0"], {}, TWO_CARDS, "a single card", id="device-selects-one"),
        pytest.param(["-dev", "CUDA0,CUDA7"], {}, TWO_CARDS, "--device CUDA7 unknown to this engine", id="unknown"),
        pytest.param(["-dev", "none"], {}, TWO_CARDS, "--device none unknown to this engine", id="device-none"),
        pytest.param([], {"LLAMA_ARG_DEVICE": "CUDA9"}, TWO_CARDS, "--device CUDA9 unknown to this engine", id="env"),
        pytest.param(
            [],
            {},
            (SplitDev("Vulkan0", 16311), SplitDev("Vulkan1", 12288)),
            "Vulkan0 is not a CUDA card",
            id="vulkan-engine",
        ),
        pytest.param(
            [],
            {},
            (SplitDev("CUDA0", 16311), SplitDev("CUDA1", 12288), SplitDev("Vulkan0", 8192)),
            "Vulkan0 is not a CUDA card",
            id="vulkan-among-cuda",
        ),
        pytest.param(
            ["-dev", "vulkan0,CUDA0"],
            {},
            (SplitDev("CUDA0", 16311), SplitDev("Vulkan0", 16311)),
            "Vulkan0 is not a CUDA card",
            id="vulkan-selected",
        ),
    ],
)
def test_device_refusals(extra, arg_env, devs, why):
    assert split_plan(BASE_PRESET, extra, make_facts(split_devs=devs, arg_env=arg_env)) == refused(why)


# --------------------------------------------------------------------------- GPU layers


@pytest.mark.parametrize(
    ("preset_ngl", "extra", "ngl_args"),
    [
        pytest.param(None, [], ["-ngl", "all"], id="no-ngl"),
        pytest.param("", [], ["-ngl", "all"], id="empty-ngl"),
        pytest.param("auto", [], ["-ngl", "all"], id="auto"),
        pytest.param("AUTO", [], ["-ngl", "all"], id="auto-upper"),
        pytest.param("999", [], ["-ngl", "all"], id="sentinel"),
        pytest.param("All", [], ["-ngl", "all"], id="all-any-case"),
        pytest.param(" 33 ", [], ["-ngl", "all"], id="blocks-plus-one"),
        pytest.param("100", [], ["-ngl", "all"], id="more-than-blocks"),
        pytest.param("20", ["-ngl", "all"], [], id="extra-all-beats-preset"),
        pytest.param(None, ["-ngl", "99"], [], id="extra-99"),
        pytest.param(None, ["-ngl", "33"], [], id="extra-blocks-plus-one"),
        pytest.param(None, ["--n-gpu-layers=ALL"], [], id="extra-long-form"),
        pytest.param(None, ["--gpu-layers", "999"], [], id="extra-sentinel"),
    ],
)
def test_gpu_layers_accepted(preset_ngl, extra, ngl_args):
    preset = dict(BASE_PRESET) if preset_ngl is None else preset_with(NGL=preset_ngl)
    plan = split_plan(preset, extra, make_facts())
    assert plan.on, plan.notes
    assert plan.ngl_args == ngl_args


@pytest.mark.parametrize(
    ("preset_ngl", "extra", "why"),
    [
        pytest.param("32", [], "NGL=32: tensor mode wants all layers on the cards (all)", id="ngl-blocks-only"),
        pytest.param(" 40x ", [], "NGL=40x: tensor mode wants all layers on the cards (all)", id="ngl-text"),
        pytest.param(
            "all", ["-ngl", "32"], "-ngl 32 in EXTRA_ARGS: tensor mode wants all layers on the cards (all)", id="extra"
        ),
        pytest.param(
            None,
            ["-ngl", "auto"],
            "-ngl auto in EXTRA_ARGS: tensor mode wants all layers on the cards (all)",
            id="auto",
        ),
    ],
)
def test_gpu_layers_refused(preset_ngl, extra, why):
    preset = dict(BASE_PRESET) if preset_ngl is None else preset_with(NGL=preset_ngl)
    assert split_plan(preset, extra, make_facts()) == refused(why)


def test_unknown_block_count_only_accepts_all_words():
    gguf = dataclasses.replace(DENSE, block_count=0)
    assert split_plan(preset_with(NGL="500"), [], make_facts(gguf=gguf)) == refused(
        "NGL=500: tensor mode wants all layers on the cards (all)"
    )


# --------------------------------------------------------------------------- companions


@pytest.mark.parametrize(
    ("extra", "arg_env", "args"),
    [
        pytest.param(["-ts", "60,40"], {}, ["-sm", "tensor", "-fa", "on"], id="extra-ts"),
        pytest.param(["--tensor-split=60,40"], {}, ["-sm", "tensor", "-fa", "on"], id="extra-ts-long"),
        pytest.param([], {"LLAMA_ARG_TENSOR_SPLIT": "1,1"}, ["-sm", "tensor", "-fa", "on"], id="env-ts"),
        pytest.param(["-fa", "on"], {}, ["-sm", "tensor", "-ts", "57,43"], id="extra-fa"),
        pytest.param(["--flash-attn=auto"], {}, ["-sm", "tensor", "-ts", "57,43"], id="extra-fa-auto"),
        pytest.param([], {"LLAMA_ARG_FLASH_ATTN": "on"}, ["-sm", "tensor", "-ts", "57,43"], id="env-fa"),
        pytest.param(
            ["-fa", "on"], {"LLAMA_ARG_FLASH_ATTN": "off"}, ["-sm", "tensor", "-ts", "57,43"], id="extra-fa-wins"
        ),
        pytest.param(["-ts", "60,40", "-fa", "on"], {}, ["-sm", "tensor"], id="both-by-user"),
    ],
)
def test_user_companions_are_never_doubled(extra, arg_env, args):
    plan = split_plan(BASE_PRESET, extra, make_facts(arg_env=arg_env))
    assert plan.on
    assert plan.args == args
    assert ("-ts 57,43 (total VRAM)" in plan.notes[0].text) == ("-ts" in args)


@pytest.mark.parametrize(
    ("user_value", "env", "fragment"),
    [
        pytest.param(None, {"GGML_CUDA_ALLREDUCE": "internal"}, "; GGML_CUDA_ALLREDUCE=internal: ", id="unset"),
        pytest.param("   ", {"GGML_CUDA_ALLREDUCE": "internal"}, "; GGML_CUDA_ALLREDUCE=internal: ", id="blank"),
        pytest.param("nccl", {}, "; warning: GGML_CUDA_ALLREDUCE=nccl (environment): NCCL compresses", id="nccl"),
        pytest.param(" NCCL ", {}, "; warning: GGML_CUDA_ALLREDUCE=nccl (environment)", id="nccl-any-case"),
        pytest.param("Ring", {}, "; GGML_CUDA_ALLREDUCE=ring (environment) kept as set", id="other"),
    ],
)
def test_allreduce(user_value, env, fragment):
    user_env = {} if user_value is None else {"GGML_CUDA_ALLREDUCE": user_value}
    plan = split_plan(BASE_PRESET, [], make_facts(user_env=user_env))
    assert plan.env == env
    assert fragment in plan.notes[0].text
    if user_value is not None and user_value.strip().lower() == "nccl":
        assert "BF16" in plan.notes[0].text
        assert "lossy" in plan.notes[0].text


# --------------------------------------------------------------------------- refusals, one at a time


@pytest.mark.parametrize(
    ("preset", "extra", "changes", "why"),
    [
        pytest.param(preset_with(SPLIT_MODE=" Rows "), [], {}, "SPLIT_MODE=Rows unreadable (tensor or off)", id="1"),
        pytest.param(preset_with(EXTERNAL="1"), [], {}, "external preset", id="2-external"),
        pytest.param(BASE_PRESET, [], {"help": OLD_ENGINE}, "this engine does not offer -sm tensor", id="3-old"),
        pytest.param(
            BASE_PRESET, [], {"help": HELP_TENSOR_WORD_ONLY}, "this engine does not offer -sm tensor", id="3-word"
        ),
        pytest.param(BASE_PRESET, [], {"help": ""}, "this engine does not offer -sm tensor", id="3-unknown"),
        pytest.param(BASE_PRESET, ["-sm", "layer"], {}, "-sm layer already in EXTRA_ARGS", id="4-sm"),
        pytest.param(BASE_PRESET, ["--split-mode=tensor"], {}, "-sm tensor already in EXTRA_ARGS", id="4-long"),
        pytest.param(
            BASE_PRESET,
            [],
            {"arg_env": {"LLAMA_ARG_SPLIT_MODE": "row"}},
            "LLAMA_ARG_SPLIT_MODE already set",
            id="5-env",
        ),
        pytest.param(
            BASE_PRESET, ["-fa", "off"], {}, "Flash Attention off (-fa off): tensor mode requires it", id="6-fa-off"
        ),
        pytest.param(
            BASE_PRESET,
            ["--flash-attn", "Disabled"],
            {},
            "Flash Attention off (-fa Disabled): tensor mode requires it",
            id="6-fa-disabled",
        ),
        pytest.param(
            BASE_PRESET,
            [],
            {"arg_env": {"LLAMA_ARG_FLASH_ATTN": "false"}},
            "Flash Attention off (-fa false): tensor mode requires it",
            id="6-fa-env",
        ),
        pytest.param(
            BASE_PRESET,
            ["-bs"],
            {},
            "GPU sampling (--backend-sampling) not supported in tensor mode",
            id="7-bs",
        ),
        pytest.param(
            BASE_PRESET,
            [],
            {"arg_env": {"LLAMA_ARG_BACKEND_SAMPLING": "1"}},
            "GPU sampling (--backend-sampling) not supported in tensor mode",
            id="7-env",
        ),
        pytest.param(
            preset_with(KV_TYPE="q8_0"),
            [],
            {},
            "KV cache q8_0/q8_0: tensor mode only accepts f16, bf16 or f32 "
            "(never rewritten automatically: the VRAM would change)",
            id="8-kv-type",
        ),
        pytest.param(
            preset_with(KV_TYPE_V="q4_0"),
            [],
            {},
            "KV cache f16/q4_0: tensor mode only accepts f16, bf16 or f32 "
            "(never rewritten automatically: the VRAM would change)",
            id="8-v-only",
        ),
        pytest.param(
            BASE_PRESET,
            ["--cache-type-k", "q8_0"],
            {},
            "KV cache q8_0/f16: tensor mode only accepts f16, bf16 or f32 "
            "(never rewritten automatically: the VRAM would change)",
            id="8-extra",
        ),
        pytest.param(
            BASE_PRESET,
            [],
            {"arg_env": {"LLAMA_ARG_CACHE_TYPE_V": "q5_1"}},
            "KV cache f16/q5_1: tensor mode only accepts f16, bf16 or f32 "
            "(never rewritten automatically: the VRAM would change)",
            id="8-env",
        ),
        pytest.param(
            BASE_PRESET,
            ["-ot", "exps=CPU"],
            {},
            "tensor override: tensor mode puts everything on the cards",
            id="9-ot",
        ),
        pytest.param(
            BASE_PRESET,
            ["--n-cpu-moe", "40"],
            {},
            "--n-cpu-moe layers on CPU: tensor mode puts everything on the cards",
            id="9-ncmoe",
        ),
        pytest.param(
            BASE_PRESET,
            [],
            {"arg_env": {"LLAMA_ARG_CPU_MOE": "1"}},
            "tensor override: tensor mode puts everything on the cards",
            id="9-env",
        ),
        pytest.param(BASE_PRESET, ["-nkvo"], {}, "KV cache on CPU", id="10-nkvo"),
        pytest.param(BASE_PRESET, [], {"arg_env": {"LLAMA_ARG_NO_KV_OFFLOAD": "1"}}, "KV cache on CPU", id="10-env"),
        pytest.param(BASE_PRESET, [], {"gguf": None}, "model metadata or size unreadable", id="11-no-gguf"),
        pytest.param(BASE_PRESET, [], {"model_bytes": 0}, "model metadata or size unreadable", id="11-no-size"),
        pytest.param(
            BASE_PRESET,
            [],
            {"gguf": dataclasses.replace(DENSE, arch="Mamba")},
            "architecture Mamba excluded from tensor mode",
            id="11-deny-arch",
        ),
        pytest.param(
            BASE_PRESET,
            [],
            {"gguf": dataclasses.replace(DENSE, arch="qwen4exp")},
            "architecture qwen4exp excluded from tensor mode",
            id="11-qwen4exp",
        ),
        pytest.param(
            preset_with(NGL="30"), [], {}, "NGL=30: tensor mode wants all layers on the cards (all)", id="12-ngl"
        ),
        pytest.param(
            preset_with(CTX="0"),
            [],
            {},
            'context "0" is not a token count: no --fit in tensor mode, give an explicit CTX',
            id="13-ctx-zero",
        ),
        pytest.param(
            BASE_PRESET,
            ["-c", "big"],
            {},
            'context "big" is not a token count: no --fit in tensor mode, give an explicit CTX',
            id="13-extra-ctx",
        ),
        pytest.param(
            preset_with(SIDE_SLOT="on"),
            [],
            {},
            "SIDE_SLOT: doubled cache, and no --fit to make up for it",
            id="14-side-slot",
        ),
        pytest.param(
            preset_with(SPEC="mtp"),
            [],
            {},
            "speculative decoding: draft and batch verification not validated in tensor mode",
            id="15-spec",
        ),
        pytest.param(
            preset_with(SPEC="maybe"),
            [],
            {},
            "speculative decoding: draft and batch verification not validated in tensor mode",
            id="15-spec-unreadable",
        ),
        pytest.param(
            BASE_PRESET,
            ["--spec-type", "ngram-mod"],
            {},
            "speculative decoding: draft and batch verification not validated in tensor mode",
            id="15-spec-extra",
        ),
        pytest.param(
            BASE_PRESET,
            [],
            {"arg_env": {"LLAMA_ARG_SPEC_DRAFT_MODEL": "/m/d.gguf"}},
            "speculative decoding: draft and batch verification not validated in tensor mode",
            id="15-spec-env",
        ),
        pytest.param(BASE_PRESET, [], {"split_devs": ()}, "cards unknown (--list-devices returned nothing)", id="16"),
        pytest.param(
            BASE_PRESET,
            [],
            {"gguf": dataclasses.replace(DENSE, key_len=0, embedding_length=0)},
            "KV cache size unknown for this model",
            id="17-state-unknown",
        ),
        pytest.param(
            preset_with(CTX="163840"),
            [],
            {},
            "not enough VRAM without --fit: ~28672 MiB (weights + cache of 163840 tokens) for 28599 MiB on 2 cards "
            "— CTX is never reduced automatically",
            id="17-vram",
        ),
    ],
)
def test_each_refusal(preset, extra, changes, why):
    assert split_plan(preset, extra, make_facts(**changes)) == refused(why)


@pytest.mark.parametrize(
    ("preset", "extra", "changes"),
    [
        pytest.param(preset_with(SPEC="off"), [], {}, id="spec-off"),
        pytest.param(preset_with(SIDE_SLOT="off"), [], {}, id="side-slot-off"),
        pytest.param(BASE_PRESET, ["--n-cpu-moe", "0"], {}, id="n-cpu-moe-zero"),
        pytest.param(BASE_PRESET, ["-nkvo", "-kvo"], {}, id="last-kv-offload-wins"),
        pytest.param(BASE_PRESET, ["-fa", "auto"], {}, id="fa-auto"),
        pytest.param(BASE_PRESET, [], {"arg_env": {"LLAMA_ARG_BACKEND_SAMPLING": "yes"}}, id="bs-env-not-truthy"),
        pytest.param(BASE_PRESET, [], {"gguf": dataclasses.replace(DENSE, arch="qwen3")}, id="arch-not-denied"),
    ],
)
def test_values_next_to_a_refusal_are_accepted(preset, extra, changes):
    assert split_plan(preset, extra, make_facts(**changes)).on


def test_ot_towards_a_gpu_is_still_manual_placement():
    assert split_plan(BASE_PRESET, ["-ot", "token_embd=CUDA1"], make_facts()) == refused(
        "tensor override: tensor mode puts everything on the cards"
    )


def test_deny_list_is_the_spec_list():
    assert len(SPLIT_DENY_ARCHS) == 31
    assert {"grok", "deepseek2", "falcon-h1", "minimax-m2", "glm5-next", "qwen4exp"} <= SPLIT_DENY_ARCHS


# --------------------------------------------------------------------------- refusal order


# Steps of section 13.10 in order: (preset changes, EXTRA tokens, arg_env, other facts, reason).
LADDER = [
    ({"SPLIT_MODE": "rows"}, [], {}, {}, "SPLIT_MODE=rows unreadable (tensor or off)"),
    ({"EXTERNAL": "1"}, [], {}, {}, "external preset"),
    ({}, [], {}, {"help": HELP_TENSOR_WORD_ONLY}, "this engine does not offer -sm tensor"),
    ({}, ["-sm", "row"], {}, {}, "-sm row already in EXTRA_ARGS"),
    ({}, [], {"LLAMA_ARG_SPLIT_MODE": "layer"}, {}, "LLAMA_ARG_SPLIT_MODE already set"),
    ({}, ["-fa", "0"], {}, {}, "Flash Attention off (-fa 0): tensor mode requires it"),
    ({}, ["--backend-sampling"], {}, {}, "GPU sampling (--backend-sampling) not supported in tensor mode"),
    (
        {"KV_TYPE": "q4_0"},
        [],
        {},
        {},
        "KV cache q4_0/q4_0: tensor mode only accepts f16, bf16 or f32 "
        "(never rewritten automatically: the VRAM would change)",
    ),
    ({}, ["-cmoe"], {}, {}, "tensor override: tensor mode puts everything on the cards"),
    ({}, ["--no-kv-offload"], {}, {}, "KV cache on CPU"),
    ({}, [], {}, {"model_bytes": 0}, "model metadata or size unreadable"),
    (
        {},
        [],
        {},
        {"gguf": dataclasses.replace(DENSE, arch="gemma3n")},
        "architecture gemma3n excluded from tensor mode",
    ),
    ({"NGL": "12"}, [], {}, {}, "NGL=12: tensor mode wants all layers on the cards (all)"),
    (
        {"CTX": "auto"},
        [],
        {},
        {},
        'context "auto" is not a token count: no --fit in tensor mode, give an explicit CTX',
    ),
    ({"SIDE_SLOT": "yes"}, [], {}, {}, "SIDE_SLOT: doubled cache, and no --fit to make up for it"),
    ({"SPEC": "ngram"}, [], {}, {}, "speculative decoding: draft and batch verification not validated in tensor mode"),
    ({}, ["-dev", "CUDA0"], {}, {}, "a single card"),
    (
        {},
        [],
        {},
        {"gguf": dataclasses.replace(DENSE, head_count_kv=0)},
        "KV cache size unknown for this model",
    ),
]


@pytest.mark.parametrize("step", range(len(LADDER)), ids=lambda i: f"step-{i + 1}")
def test_first_failing_step_wins(step):
    """Step N fails together with every later step: step N's reason is the one reported."""
    preset, extra, arg_env, facts_changes = ladder_inputs(BASE_PRESET, LADDER, step)
    result = split_plan(preset, extra, make_facts(arg_env=arg_env, **facts_changes))
    assert result == refused(LADDER[step][4])
