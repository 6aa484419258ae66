"""Spec section 8.2: SIDE_SLOT, a second slot of CTX tokens for side jobs.

Reference machine: a dense 32-layer model of 8 GiB, 24576 MiB of NVIDIA VRAM
(90 % = 22118.4 MiB). KV bytes per token (f16): 32 layers × 8 KV heads ×
(128 × 2 + 128 × 2) = 131072 B = 1/8 MiB, so one slot of 32768 tokens holds
4096 MiB of state and the check is 8192 + 2 × 4096 = 16384 MiB.
"""

from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import ngl_forced
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.side_slot import (
    SIDE_SLOT_ARG_ENV,
    SIDE_SLOT_CONFLICT_FLAGS,
    side_slot_note,
    side_slot_plan,
    side_slot_vram,
)
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE
from tests.unit.support.ladder import ladder_inputs
from tests.unit.support.models import DENSE_32, HYBRID_64

GIB = 1 << 30

DENSE = DENSE_32
HYBRID = HYBRID_64

ON = {"SIDE_SLOT": "on"}


def make_facts(**changes) -> HostFacts:
    base = HostFacts(help=NEW_ENGINE, model="/models/dense.gguf", gguf=DENSE, model_bytes=8 * GIB, vram_mib=24576)
    return dataclasses.replace(base, **changes)


def preset_with(**changes: str) -> dict[str, str]:
    return {**ON, **changes}


# --------------------------------------------------------------------------- off


@pytest.mark.parametrize("value", [None, "", "off", "0", "no", "non", "false", "maybe"], ids=repr)
def test_off_is_silent(value):
    preset = {} if value is None else {"SIDE_SLOT": value}
    assert side_slot_plan(preset, [], make_facts()) == (0, 0, "")
    assert side_slot_note(0, 0, "", ngl_forced=True) is None


def test_off_reads_nothing_else():
    # Every other input is hostile, yet without the key nothing is refused.
    facts = make_facts(help="", vram_mib=0, gguf=None, arg_env={"LLAMA_ARG_N_PARALLEL": "4"})
    assert side_slot_plan({"PARALLEL": "8", "CTX": "x"}, ["-c", "1"], facts) == (0, 0, "")


# --------------------------------------------------------------------------- acceptance


@pytest.mark.parametrize("value", ["on", "ON", " On ", "1", "true", "yes", "oui"], ids=repr)
def test_truthy_values(value):
    assert side_slot_plan({"SIDE_SLOT": value}, [], make_facts()) == (32768, 4096, "")


@pytest.mark.parametrize(
    ("preset", "extra", "changes", "expected"),
    [
        pytest.param(ON, [], {}, (32768, 4096, ""), id="default-ctx-32768"),
        pytest.param(preset_with(CTX=" 8192 "), [], {}, (8192, 1024, ""), id="ctx-trimmed"),
        pytest.param(preset_with(CTX="+8192"), [], {}, (8192, 1024, ""), id="ctx-plus-sign"),
        pytest.param(preset_with(CTX="1000"), [], {}, (1000, 125, ""), id="exact-mib"),
        pytest.param(preset_with(CTX="1001"), [], {}, (1001, 126, ""), id="rounded-up"),
        pytest.param(preset_with(PARALLEL="2"), [], {}, (32768, 4096, ""), id="parallel-2"),
        pytest.param(preset_with(PARALLEL=" 2 "), [], {}, (32768, 4096, ""), id="parallel-2-trimmed"),
        pytest.param(preset_with(NGL="999"), [], {}, (32768, 4096, ""), id="ngl-sentinel-all"),
        pytest.param(preset_with(NGL="33"), [], {}, (32768, 4096, ""), id="ngl-covers-all-layers"),
        # q8_0: 32 × 8 × (128 × 34/32) × 2 = 69632 B/token -> 32768 tokens = 2176 MiB.
        pytest.param(preset_with(KV_TYPE="q8_0"), [], {}, (32768, 2176, ""), id="kv-q8_0"),
        # -ctk q4_0: 32 × 8 × (128 × 18/32 + 128 × 2) = 83968 B/token -> 2624 MiB.
        pytest.param(ON, ["-ctk", "q4_0"], {}, (32768, 2624, ""), id="extra-kv-k-only"),
        # K f32 from the environment: 32 × 8 × (128 × 4 + 128 × 2) = 196608 B/token -> 6144 MiB.
        pytest.param(ON, [], {"arg_env": {"LLAMA_ARG_CACHE_TYPE_K": "f32"}}, (32768, 6144, ""), id="env-kv-k-f32"),
        # Both f32: 8192 MiB per slot, 8192 + 2 × 8192 > 22118.4.
        pytest.param(
            ON,
            [],
            {"arg_env": {"LLAMA_ARG_CACHE_TYPE_K": "f32", "LLAMA_ARG_CACHE_TYPE_V": "f32"}},
            (0, 0, "not enough VRAM: model + 2 × 8192 MiB of state exceed 90 % of 24576 MiB"),
            id="env-kv-f32-too-big",
        ),
        # 65536 B × 32768 = 2048 MiB + 100.5 MiB recurrent = 2148.5 -> 2149; 16384 + 2 × 2148.5 ≤ 22118.4.
        pytest.param(ON, [], {"gguf": HYBRID, "model_bytes": 16 * GIB}, (32768, 2149, ""), id="hybrid"),
        pytest.param(ON, ["--host", "127.0.0.1"], {}, (32768, 4096, ""), id="unrelated-extra"),
    ],
)
def test_accepted(preset, extra, changes, expected):
    assert side_slot_plan(preset, extra, make_facts(**changes)) == expected


def test_largest_context_whose_double_is_a_c_int():
    """Fuzz finding: 1073741823 tokens doubles to 2147483646, still a C int; 1073741824 is refused (above)."""
    tokens, extra_mib, why = side_slot_plan(preset_with(CTX="1073741823"), [], make_facts(vram_mib=2**50))
    assert (tokens, why) == (1073741823, "")
    assert extra_mib > 0


def test_vram_boundary_is_strictly_greater():
    # 8192 MiB + 2 × 40960 tokens × 1/8 MiB = 18432 MiB = exactly 90 % of 20480 MiB.
    facts = make_facts(vram_mib=20480)
    assert side_slot_plan(preset_with(CTX="40960"), [], facts) == (40960, 5120, "")
    over = dataclasses.replace(facts, model_bytes=8 * GIB + 1)
    assert side_slot_plan(preset_with(CTX="40960"), [], over) == (
        0,
        0,
        "not enough VRAM: model + 2 × 5120 MiB of state exceed 90 % of 20480 MiB",
    )


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("flag", SIDE_SLOT_CONFLICT_FLAGS)
def test_each_conflicting_flag(flag):
    assert side_slot_plan(ON, [flag, "4"], make_facts()) == (0, 0, f"{flag} is set in EXTRA_ARGS")
    assert side_slot_plan(ON, [f"{flag}=4"], make_facts()) == (0, 0, f"{flag} is set in EXTRA_ARGS")


@pytest.mark.parametrize("var", SIDE_SLOT_ARG_ENV)
def test_each_environment_lever(var):
    assert side_slot_plan(ON, [], make_facts(arg_env={var: "1"})) == (0, 0, f"{var} is set")


def test_conflict_lists_are_the_spec_lists():
    assert SIDE_SLOT_CONFLICT_FLAGS == (
        "-c",
        "--ctx-size",
        "-np",
        "--parallel",
        "-kvu",
        "--kv-unified",
        "-no-kvu",
        "--no-kv-unified",
        "--kv-unified-per-slot",
        "--cache-idle-slots",
        "--no-cache-idle-slots",
    )
    assert SIDE_SLOT_ARG_ENV == (
        "LLAMA_ARG_N_PARALLEL",
        "LLAMA_ARG_KV_UNIFIED",
        "LLAMA_ARG_KV_UNIFIED_PER_SLOT",
        "LLAMA_ARG_CACHE_IDLE_SLOTS",
        "LLAMA_ARG_CTX_SIZE",
    )


@pytest.mark.parametrize(
    ("extra", "arg_env", "why"),
    [
        pytest.param(
            ["--no-cache-idle-slots", "--parallel", "2", "-c", "100"], {}, "-c is set in EXTRA_ARGS", id="flags"
        ),
        pytest.param(
            [],
            {"LLAMA_ARG_CTX_SIZE": "8192", "LLAMA_ARG_KV_UNIFIED": "1", "LLAMA_ARG_N_PARALLEL": "2"},
            "LLAMA_ARG_N_PARALLEL is set",
            id="env",
        ),
        pytest.param(["-kvu"], {"LLAMA_ARG_N_PARALLEL": "2"}, "-kvu is set in EXTRA_ARGS", id="flags-before-env"),
    ],
)
def test_checks_follow_the_listed_order_not_the_token_order(extra, arg_env, why):
    assert side_slot_plan(ON, extra, make_facts(arg_env=arg_env)) == (0, 0, why)


@pytest.mark.parametrize(
    ("preset", "extra", "changes", "why"),
    [
        pytest.param(preset_with(EXTERNAL="1"), [], {}, "external preset", id="2-external"),
        pytest.param(preset_with(PARALLEL="3"), [], {}, "PARALLEL=3 (SIDE_SLOT opens exactly 2 slots)", id="3"),
        pytest.param(
            preset_with(PARALLEL=" auto "), [], {}, "PARALLEL=auto (SIDE_SLOT opens exactly 2 slots)", id="3b"
        ),
        pytest.param(ON, ["-np", "2"], {}, "-np is set in EXTRA_ARGS", id="4-even-2"),
        pytest.param(ON, [], {"arg_env": {"LLAMA_ARG_KV_UNIFIED": "0"}}, "LLAMA_ARG_KV_UNIFIED is set", id="5"),
        pytest.param(ON, [], {"help": OLD_ENGINE}, "this engine does not know --no-kv-unified", id="6-old"),
        pytest.param(ON, [], {"help": ""}, "this engine does not know --no-kv-unified", id="6-unknown"),
        pytest.param(preset_with(CTX="0"), [], {}, "CTX must be an explicit token count", id="7-zero"),
        pytest.param(preset_with(CTX="-5"), [], {}, "CTX must be an explicit token count", id="7-negative"),
        pytest.param(preset_with(CTX="32k"), [], {}, "CTX must be an explicit token count", id="7-text"),
        pytest.param(preset_with(CTX="1.5"), [], {}, "CTX must be an explicit token count", id="7-float"),
        # -c is read with std::stoi: 2×CTX beyond a C int would stop the engine at start (fuzz finding).
        pytest.param(
            preset_with(CTX="1073741824"),
            [],
            {"vram_mib": 2**50},
            "CTX=1073741824: -c 2147483648 would exceed llama.cpp's limit of 2147483647",
            id="7-doubled-beyond-c-int",
        ),
        pytest.param(ON, [], {"vram_mib": 0}, "NVIDIA VRAM unknown (macOS, AMD, --device…)", id="8-vram"),
        pytest.param(ON, [], {"gguf": None}, "GGUF metadata unreadable", id="8-gguf"),
        pytest.param(ON, [], {"model_bytes": 0}, "model size unknown", id="8-size"),
        pytest.param(preset_with(NGL="20"), [], {}, "GPU layers limited to 20", id="8-ngl"),
        pytest.param(ON, ["-ngl", "32"], {}, "GPU layers limited to 32", id="8-extra-ngl"),
        pytest.param(ON, ["-ot", "exps=CPU"], {}, "tensors on CPU (-ot)", id="8-ot"),
        pytest.param(ON, ["--cpu-moe"], {}, "experts on CPU", id="8-cpu-moe"),
        pytest.param(ON, ["-nkvo"], {}, "KV cache on CPU", id="8-kv-on-cpu"),
        pytest.param(ON, [], {"gguf": dataclasses.replace(DENSE, head_count_kv=0)}, "state size unknown", id="8-state"),
        pytest.param(
            preset_with(CTX="65536"),
            [],
            {},
            "not enough VRAM: model + 2 × 8192 MiB of state exceed 90 % of 24576 MiB",
            id="8-too-big",
        ),
    ],
)
def test_each_refusal(preset, extra, changes, why):
    assert side_slot_plan(preset, extra, make_facts(**changes)) == (0, 0, why)


# Steps of section 8.2 in order: (preset changes, EXTRA tokens, arg_env, other facts, reason).
LADDER = [
    ({"EXTERNAL": "1"}, [], {}, {}, "external preset"),
    ({"PARALLEL": "4"}, [], {}, {}, "PARALLEL=4 (SIDE_SLOT opens exactly 2 slots)"),
    ({}, ["--kv-unified"], {}, {}, "--kv-unified is set in EXTRA_ARGS"),
    ({}, [], {"LLAMA_ARG_CACHE_IDLE_SLOTS": "1"}, {}, "LLAMA_ARG_CACHE_IDLE_SLOTS is set"),
    ({}, [], {}, {"help": OLD_ENGINE}, "this engine does not know --no-kv-unified"),
    ({"CTX": "0"}, [], {}, {}, "CTX must be an explicit token count"),
    ({}, [], {}, {"vram_mib": 0}, "NVIDIA VRAM unknown (macOS, AMD, --device…)"),
    ({}, [], {}, {"gguf": None}, "GGUF metadata unreadable"),
    ({}, [], {}, {"model_bytes": 0}, "model size unknown"),
    ({"NGL": "8"}, [], {}, {}, "GPU layers limited to 8"),
    ({}, [], {}, {"gguf": dataclasses.replace(DENSE, key_len=0, embedding_length=0)}, "state size unknown"),
]


@pytest.mark.parametrize("step", range(len(LADDER)), ids=lambda i: f"step-{i + 2}")
def test_first_failing_step_wins(step):
    """Step N fails together with every later step: step N's reason is the one reported."""
    preset, extra, arg_env, facts_changes = ladder_inputs(ON, LADDER, step)
    assert side_slot_plan(preset, extra, make_facts(arg_env=arg_env, **facts_changes)) == (0, 0, LADDER[step][4])


# --------------------------------------------------------------------------- side_slot_vram directly


@pytest.mark.parametrize(
    ("ctx", "changes", "expected"),
    [
        pytest.param(32768, {}, (4096, ""), id="fits"),
        pytest.param(8, {}, (1, ""), id="tiny-rounds-up"),
        pytest.param(
            65536, {}, (0, "not enough VRAM: model + 2 × 8192 MiB of state exceed 90 % of 24576 MiB"), id="too-big"
        ),
        pytest.param(32768, {"vram_mib": -1}, (0, "NVIDIA VRAM unknown (macOS, AMD, --device…)"), id="vram-negative"),
    ],
)
def test_side_slot_vram(ctx, changes, expected):
    assert side_slot_vram(ON, [], make_facts(**changes), ctx) == expected


# --------------------------------------------------------------------------- note


def test_refused_note():
    assert side_slot_note(0, 0, "external preset", ngl_forced=False) == Note(
        "side.refused", "SIDE_SLOT refused (external preset): single slot, as without the key"
    )


@pytest.mark.parametrize(
    ("forced", "suffix"),
    [
        pytest.param(True, "; NGL is forced: watch the VRAM on the first long prompt", id="forced"),
        pytest.param(False, "; automatic placement will move layers off the GPU if it runs short of room", id="auto"),
    ],
)
def test_accepted_note(forced, suffix):
    note = side_slot_note(32768, 4096, "", forced)
    assert note is not None
    assert note.id == "side.accepted"
    assert note.text.startswith("SIDE_SLOT: 2 slots of 32768 tokens (-c 65536, --no-kv-unified), ~4096 MiB more VRAM")
    assert note.text.endswith(suffix)


@pytest.mark.parametrize(
    ("preset", "extra", "forced"),
    [
        pytest.param(ON, [], False, id="no-ngl"),
        pytest.param(preset_with(NGL="999"), [], False, id="sentinel"),
        pytest.param(preset_with(NGL="auto"), [], False, id="auto"),
        pytest.param(preset_with(NGL="all"), [], True, id="all"),
        pytest.param(preset_with(NGL="40"), [], True, id="number"),
        pytest.param(ON, ["-ngl", "999"], True, id="extra-999-is-a-choice"),
    ],
)
def test_note_suffix_follows_ngl_forced(preset, extra, forced):
    ctx, extra_mib, why = side_slot_plan(preset, extra, make_facts())
    assert (ctx, why) == (32768, "")
    note = side_slot_note(ctx, extra_mib, why, ngl_forced(preset, extra))
    assert note is not None
    assert ("NGL is forced" in note.text) is forced
    assert ("automatic placement" in note.text) is not forced
