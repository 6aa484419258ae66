"""Spec sections 9.2-9.4: slow-KV warning, KV fidelity note, lossy cache notes."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.fidelity import (
    kv_fidelity,
    kv_fidelity_note,
    lossy_cache_notes,
    slow_kv_warning,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import effective_kv_types
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import split_args
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE

BF16 = "numerically different from f16 (shorter mantissa)"
SLIGHT = "slightly changes the outputs compared with f16"
MEASURABLE = "measurable loss compared with f16"
UNKNOWN = "changes the outputs compared with f16"
OVERRIDE_SUFFIX = "--n-cpu-moe would probably have to go up."
VISION = " (vision loaded: llama.cpp ignores it anyway)"


# --- 9.2 slow KV ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "v"),
    [
        ("", ""),
        ("f16", ""),
        ("", "f16"),
        ("f16", "f16"),
        ("q8_0", "q8_0"),
        ("q4_0", "q4_0"),
        ("bf16", "bf16"),
    ],
    ids=["default", "k-f16-v-default", "k-default-v-f16", "f16", "q8_0", "q4_0", "bf16"],
)
def test_fast_pairs_are_silent(k, v):
    assert slow_kv_warning(k, v) is None


@pytest.mark.parametrize(
    ("k", "v", "shown"),
    [
        ("q8_0", "q4_0", "q8_0/q4_0"),
        ("q8_0", "", "q8_0/f16"),
        ("", "q4_0", "f16/q4_0"),
        ("q5_0", "q5_0", "q5_0/q5_0"),
        ("q5_1", "q5_1", "q5_1/q5_1"),
        ("q4_1", "q4_1", "q4_1/q4_1"),
        ("f32", "f32", "f32/f32"),
        ("bf16", "f16", "bf16/f16"),
        ("Q8_0", "Q8_0", "Q8_0/Q8_0"),
    ],
    ids=["mixed-q8-q4", "q8-default", "default-q4", "q5_0", "q5_1", "q4_1", "f32", "bf16-f16", "upper-case"],
)
def test_slow_pairs_warn_with_actual_types(k, v, shown):
    note = slow_kv_warning(k, v)
    assert note is not None
    assert note.id == "kv.slow"
    assert note.text == (
        f"KV cache {shown} not accelerated by llama.cpp CUDA (converted to f16 at each step, slow). "
        "Prefer q8_0/q8_0, q4_0/q4_0 or f16."
    )


# --- 9.3 KV fidelity -----------------------------------------------------------------------------


RANKS = [
    ("", 0, ""),
    ("f16", 0, ""),
    ("f32", 0, ""),
    (" F16 ", 0, ""),
    ("bf16", 1, BF16),
    ("q8_0", 2, SLIGHT),
    ("q5_0", 2, SLIGHT),
    ("q5_1", 2, SLIGHT),
    ("Q8_0", 2, SLIGHT),
    ("q4_0", 3, MEASURABLE),
    ("q4_1", 3, MEASURABLE),
    ("iq4_nl", 3, MEASURABLE),
    ("q3_k", 2, UNKNOWN),
    ("turbo3", 2, UNKNOWN),
]


@pytest.mark.parametrize(("kv_type", "rank", "label"), RANKS, ids=[repr(row[0]) for row in RANKS])
def test_kv_fidelity_rank_and_label(kv_type, rank, label):
    assert kv_fidelity(kv_type) == (rank, label)


@pytest.mark.parametrize(
    ("k", "v"),
    [("", ""), ("f16", "f16"), ("f32", "f32"), ("f16", "f32"), ("", "F16")],
    ids=["default", "f16", "f32", "f16-f32", "default-upper-f16"],
)
def test_lossless_kv_is_silent(k, v):
    assert kv_fidelity_note(k, v, "KV_TYPE", [], {}) is None


@pytest.mark.parametrize(
    ("k", "v", "shown", "label"),
    [
        ("bf16", "bf16", "bf16/bf16", BF16),
        ("q8_0", "q8_0", "q8_0/q8_0", SLIGHT),
        ("q5_1", "q5_0", "q5_1/q5_0", SLIGHT),
        ("q4_0", "q4_0", "q4_0/q4_0", MEASURABLE),
        ("iq4_nl", "q4_1", "iq4_nl/q4_1", MEASURABLE),
        ("q3_k", "q3_k", "q3_k/q3_k", UNKNOWN),
        ("", "q8_0", "f16/q8_0", SLIGHT),
        ("q8_0", "", "q8_0/f16", SLIGHT),
        ("bf16", "", "bf16/f16", BF16),
        ("q8_0", "q4_0", "q8_0/q4_0", MEASURABLE),
        ("q4_0", "q8_0", "q4_0/q8_0", MEASURABLE),
        ("bf16", "q8_0", "bf16/q8_0", SLIGHT),
        ("q8_0", "bf16", "q8_0/bf16", SLIGHT),
        ("q3_k", "q4_0", "q3_k/q4_0", MEASURABLE),
        # Ties: K's label is kept.
        ("q8_0", "q3_k", "q8_0/q3_k", SLIGHT),
        ("q3_k", "q8_0", "q3_k/q8_0", UNKNOWN),
        ("q4_0", "iq4_nl", "q4_0/iq4_nl", MEASURABLE),
    ],
    ids=[
        "bf16",
        "q8_0",
        "q5-pair",
        "q4_0",
        "iq4-q4_1",
        "unknown",
        "only-v",
        "only-k",
        "bf16-k-only",
        "worse-v",
        "worse-k",
        "bf16-vs-q8-v",
        "q8-vs-bf16-k",
        "unknown-vs-q4",
        "tie-known-k",
        "tie-unknown-k",
        "tie-rank3",
    ],
)
def test_kv_fidelity_note_text(k, v, shown, label):
    note = kv_fidelity_note(k, v, "KV_TYPE", [], {})
    assert note is not None
    assert note.id == "fidelity.kv"
    assert note.text == f"KV cache {shown} (KV_TYPE): {label} — the user's choice, left as is."


@pytest.mark.parametrize(
    ("preset", "extra", "arg_env", "shown", "source"),
    [
        ({}, "", {"LLAMA_ARG_CACHE_TYPE_K": "q8_0"}, "q8_0/f16", "set by LLAMA_ARG_CACHE_TYPE_K/V"),
        ({}, "", {"LLAMA_ARG_CACHE_TYPE_V": "q4_0"}, "f16/q4_0", "set by LLAMA_ARG_CACHE_TYPE_K/V"),
        ({"KV_TYPE": "q8_0"}, "", {}, "q8_0/q8_0", "KV_TYPE"),
        ({"KV_TYPE_V": "q4_0"}, "", {"LLAMA_ARG_CACHE_TYPE_K": "q8_0"}, "q8_0/q4_0", "KV_TYPE"),
        ({"KV_TYPE": "f16"}, "--cache-type-k q8_0 --cache-type-v q8_0", {}, "q8_0/q8_0", "set by EXTRA_ARGS"),
        ({}, "-ctk q4_0 -ctv q4_0 -ctk q8_0", {}, "q8_0/q4_0", "set by EXTRA_ARGS"),
        ({}, "--cache-type-v=q8_0", {}, "f16/q8_0", "set by EXTRA_ARGS"),
    ],
    ids=["env-k", "env-v", "kv-type", "kv-type-over-env", "extra-over-preset", "extra-last-wins", "extra-eq-form"],
)
def test_kv_fidelity_note_names_its_source(preset, extra, arg_env, shown, source):
    tokens = split_args(extra)
    k, v, src = effective_kv_types(preset, tokens, arg_env)
    note = kv_fidelity_note(k, v, src, tokens, arg_env)
    assert note is not None
    assert note.text.startswith(f"KV cache {shown} ({source}): ")


def test_kv_fidelity_note_without_source_has_no_empty_brackets():
    note = kv_fidelity_note("q8_0", "q8_0", "", [], {})
    assert note is not None
    assert note.text.startswith(f"KV cache q8_0/q8_0: {SLIGHT}")


@pytest.mark.parametrize(
    ("extra", "arg_env", "suffix"),
    [
        ("", {}, False),
        ("-ot per_layer_token_embd.weight=CPU --n-cpu-moe 40", {}, True),
        ("-ot blk\\..*_exps\\.=CPU", {}, True),
        ("--cpu-moe", {}, True),
        ("-cmoe", {}, True),
        ("--n-cpu-moe 20", {}, True),
        ("-ncmoe=4", {}, True),
        ("--n-cpu-ffn 3", {}, True),
        ("--n-cpu-moe 0", {}, False),
        ("--n-cpu-moe 20 --n-cpu-moe 0", {}, True),
        ("", {"LLAMA_ARG_N_CPU_MOE": "30"}, True),
        ("--n-cpu-moe 0", {"LLAMA_ARG_N_CPU_MOE": "30"}, True),
        ("", {"LLAMA_ARG_N_CPU_MOE": "0"}, False),
        ("", {"LLAMA_ARG_OVERRIDE_TENSOR": "exps=CPU"}, True),
        ("", {"LLAMA_ARG_CPU_MOE": "1"}, True),
        ("", {"LLAMA_ARG_CPU_MOE": "yes"}, False),
    ],
    ids=[
        "free-placement",
        "ot-and-ncmoe",
        "ot-experts",
        "cpu-moe",
        "cmoe",
        "n-cpu-moe",
        "ncmoe-eq",
        "n-cpu-ffn",
        "n-cpu-moe-zero",
        "zero-does-not-cancel",
        "env-n-cpu-moe",
        "flag-zero-does-not-cancel-env",
        "env-zero",
        "env-override-tensor",
        "env-cpu-moe-truthy",
        "env-cpu-moe-not-truthy",
    ],
)
def test_kv_fidelity_tensor_override_suffix(extra, arg_env, suffix):
    note = kv_fidelity_note("q8_0", "q8_0", "KV_TYPE", split_args(extra), arg_env)
    assert note is not None
    assert note.text.endswith(OVERRIDE_SUFFIX) is suffix
    assert ("--fit" in note.text) is suffix


# --- 9.4 lossy cache notes -----------------------------------------------------------------------


def ids_of(notes):
    return [n.id for n in notes]


def facts(help_text=NEW_ENGINE, arg_env=None, mmproj=""):
    return HostFacts(help=help_text, arg_env=arg_env or {}, mmproj=mmproj)


@pytest.mark.parametrize(
    ("extra", "help_text", "arg_env", "expected"),
    [
        # EXTRA_ARGS decides whatever the engine and environment say; last one wins.
        ("--context-shift", NEW_ENGINE, {}, "lossy.shift"),
        ("--no-context-shift", NEW_ENGINE, {"LLAMA_ARG_CONTEXT_SHIFT": "1"}, None),
        ("--context-shift --no-context-shift", NEW_ENGINE, {}, None),
        ("--no-context-shift --context-shift", NEW_ENGINE, {}, "lossy.shift"),
        ("--context-shift", OLD_ENGINE, {"LLAMA_ARG_NO_CONTEXT_SHIFT": "1"}, "lossy.shift"),
        ("--no-context-shift", OLD_ENGINE, {}, None),
        ("--context-shift", "", {}, "lossy.shift"),
        # Old engine: shifts by default unless LLAMA_ARG_NO_CONTEXT_SHIFT is truthy.
        ("", OLD_ENGINE, {}, "lossy.shift_default"),
        ("", OLD_ENGINE, {"LLAMA_ARG_NO_CONTEXT_SHIFT": "1"}, None),
        ("", OLD_ENGINE, {"LLAMA_ARG_NO_CONTEXT_SHIFT": " true "}, None),
        ("", OLD_ENGINE, {"LLAMA_ARG_NO_CONTEXT_SHIFT": "yes"}, "lossy.shift_default"),
        ("", OLD_ENGINE, {"LLAMA_ARG_NO_CONTEXT_SHIFT": "0"}, "lossy.shift_default"),
        ("", OLD_ENGINE, {"LLAMA_ARG_CONTEXT_SHIFT": "0"}, "lossy.shift_default"),
        # New engine: off by default, LLAMA_ARG_CONTEXT_SHIFT truthy turns it on.
        ("", NEW_ENGINE, {}, None),
        ("", NEW_ENGINE, {"LLAMA_ARG_CONTEXT_SHIFT": "on"}, "lossy.shift"),
        ("", NEW_ENGINE, {"LLAMA_ARG_CONTEXT_SHIFT": "ON"}, None),
        ("", NEW_ENGINE, {"LLAMA_ARG_NO_CONTEXT_SHIFT": "0"}, None),
        # Empty help: no default assumed, the variable still counts.
        ("", "", {}, None),
        ("", "", {"LLAMA_ARG_CONTEXT_SHIFT": "enabled"}, "lossy.shift"),
    ],
    ids=[
        "extra-on",
        "extra-off-beats-env",
        "extra-last-off",
        "extra-last-on",
        "extra-on-old-engine",
        "extra-off-old-engine",
        "extra-on-empty-help",
        "old-default",
        "old-no-shift-env",
        "old-no-shift-env-trimmed",
        "old-no-shift-env-yes-not-truthy",
        "old-no-shift-env-zero",
        "old-ignores-context-shift-env",
        "new-default-off",
        "new-env-on",
        "new-env-upper-not-truthy",
        "new-ignores-no-shift-env",
        "empty-help",
        "empty-help-env-on",
    ],
)
def test_context_shift_matrix(extra, help_text, arg_env, expected):
    notes = lossy_cache_notes(split_args(extra), facts(help_text, arg_env))
    assert ids_of(notes) == ([expected] if expected else [])


@pytest.mark.parametrize(
    ("extra", "help_text", "arg_env", "source"),
    [
        ("--context-shift", NEW_ENGINE, {}, "EXTRA_ARGS"),
        ("", NEW_ENGINE, {"LLAMA_ARG_CONTEXT_SHIFT": "true"}, "LLAMA_ARG_CONTEXT_SHIFT"),
    ],
    ids=["extra", "env"],
)
def test_context_shift_note_text(extra, help_text, arg_env, source):
    (note,) = lossy_cache_notes(split_args(extra), facts(help_text, arg_env))
    assert note.text == (
        f"warning: --context-shift ({source}) — when the context is full, old tokens are dropped and the model "
        "silently loses part of the conversation."
    )


def test_context_shift_default_note_text():
    (note,) = lossy_cache_notes([], facts(OLD_ENGINE))
    assert note.text == (
        "warning: this old llama-server shifts the context by default — when the context is full, old tokens are "
        "dropped and the model silently loses part of the conversation. --no-context-shift in EXTRA_ARGS "
        "prevents it."
    )


@pytest.mark.parametrize(
    ("extra", "arg_env", "shown"),
    [
        ("--cache-reuse 256", {}, "--cache-reuse 256 (EXTRA_ARGS)"),
        ("--cache-reuse=256", {}, "--cache-reuse 256 (EXTRA_ARGS)"),
        ("--cache-reuse 64 --cache-reuse 128", {}, "--cache-reuse 128 (EXTRA_ARGS)"),
        ("--cache-reuse +32", {}, "--cache-reuse 32 (EXTRA_ARGS)"),
        ("", {"LLAMA_ARG_CACHE_REUSE": "256"}, "--cache-reuse 256 (LLAMA_ARG_CACHE_REUSE)"),
        ("", {"LLAMA_ARG_CACHE_REUSE": " 16 "}, "--cache-reuse 16 (LLAMA_ARG_CACHE_REUSE)"),
        ("--cache-reuse 8", {"LLAMA_ARG_CACHE_REUSE": "256"}, "--cache-reuse 8 (EXTRA_ARGS)"),
        ("--cache-reuse 0", {}, None),
        ("--cache-reuse 0", {"LLAMA_ARG_CACHE_REUSE": "256"}, None),
        ("--cache-reuse -4", {}, None),
        ("--cache-reuse big", {}, None),
        ("--cache-reuse big", {"LLAMA_ARG_CACHE_REUSE": "256"}, None),
        ("", {"LLAMA_ARG_CACHE_REUSE": "0"}, None),
        ("", {"LLAMA_ARG_CACHE_REUSE": "x"}, None),
        ("--cache-reuse", {}, None),
        ("--swa-full", {}, None),
    ],
    ids=[
        "extra",
        "extra-eq",
        "extra-last-wins",
        "extra-signed",
        "env",
        "env-trimmed",
        "extra-beats-env",
        "extra-zero",
        "extra-zero-overrides-env",
        "extra-negative",
        "extra-text",
        "extra-text-overrides-env",
        "env-zero",
        "env-text",
        "trailing-flag",
        "swa-full-lossless",
    ],
)
def test_cache_reuse(extra, arg_env, shown):
    notes = lossy_cache_notes(split_args(extra), facts(NEW_ENGINE, arg_env))
    if shown is None:
        assert notes == []
        return
    (note,) = notes
    assert note.id == "lossy.cache_reuse"
    assert note.text == (
        f"warning: {shown} — reuses cache chunks computed under another prefix: the outputs are no longer "
        "exactly those of a full computation."
    )


@pytest.mark.parametrize(
    ("extra", "arg_env", "name"),
    [
        ("--spec-synth-len 4", {}, "--spec-synth-len"),
        ("--spec-synth-len=4", {}, "--spec-synth-len"),
        ("--spec-synth-accept 0.5 --spec-synth-len 4", {}, "--spec-synth-accept"),
        ("", {"LLAMA_ARG_SPEC_SYNTH_LEN": "4"}, "LLAMA_ARG_SPEC_SYNTH_LEN"),
        ("--spec-synth-len 4", {"LLAMA_ARG_SPEC_SYNTH_LEN": "4"}, "--spec-synth-len"),
        ("", {"LLAMA_ARG_SPEC_SYNTH_LEN": ""}, None),
        ("--spec-type draft-mtp", {}, None),
    ],
    ids=["flag", "flag-eq", "first-flag-named", "env", "flag-beats-env", "env-empty", "other-spec-flag"],
)
def test_synthetic_acceptance(extra, arg_env, name):
    notes = lossy_cache_notes(split_args(extra), facts(NEW_ENGINE, arg_env))
    if name is None:
        assert notes == []
        return
    (note,) = notes
    assert note.id == "lossy.synth"
    assert note.text == (
        f"warning: {name} — the engine accepts draft tokens AT RANDOM, without verification: the answers are no "
        "longer the model's. Meant for benchmarks only, remove it."
    )


@pytest.mark.parametrize(
    ("extra", "arg_env", "mmproj", "vision"),
    [
        ("", {}, "", False),
        ("", {}, "/models/mmproj-f16.gguf", True),
        ("-mm /m/p.gguf", {}, "", True),
        ("--mmproj /m/p.gguf", {}, "", True),
        ("--mmproj=/m/p.gguf", {}, "", True),
        ("-mmu https://x/p.gguf", {}, "", True),
        ("--mmproj-url https://x/p.gguf", {}, "", True),
        ("", {"LLAMA_ARG_MMPROJ": "/m/p.gguf"}, "", True),
        ("", {"LLAMA_ARG_MMPROJ_URL": "https://x/p.gguf"}, "", True),
        ("", {"LLAMA_ARG_MMPROJ": ""}, "", False),
        ("--no-mmproj", {}, "", False),
    ],
    ids=[
        "none",
        "mmproj-resolved",
        "extra-mm",
        "extra-mmproj",
        "extra-mmproj-eq",
        "extra-mmu",
        "extra-mmproj-url",
        "env-mmproj",
        "env-mmproj-url",
        "env-empty",
        "no-mmproj-flag",
    ],
)
def test_vision_suffix_sources(extra, arg_env, mmproj, vision):
    tokens = [*split_args(extra), "--context-shift", "--cache-reuse", "64", "--spec-synth-len", "4"]
    notes = lossy_cache_notes(tokens, facts(NEW_ENGINE, arg_env, mmproj))
    assert ids_of(notes) == ["lossy.shift", "lossy.cache_reuse", "lossy.synth"]
    shift, reuse, synth = (n.text for n in notes)
    assert shift.endswith(f"conversation{VISION}.") is vision
    assert reuse.endswith(f"computation{VISION}.") is vision
    # Synthetic acceptance is not a cache feature: vision does not switch it off.
    assert VISION not in synth


def test_vision_suffix_on_old_engine_default():
    (note,) = lossy_cache_notes([], facts(OLD_ENGINE, mmproj="/m/p.gguf"))
    assert note.id == "lossy.shift_default"
    assert f"conversation{VISION}. --no-context-shift" in note.text


def test_lossy_notes_order_is_shift_reuse_synth():
    tokens = split_args("--spec-synth-len 4 --cache-reuse 64 --swa-full --context-shift")
    assert ids_of(lossy_cache_notes(tokens, facts())) == ["lossy.shift", "lossy.cache_reuse", "lossy.synth"]


def test_lossy_notes_order_with_environment_only():
    env = {"LLAMA_ARG_SPEC_SYNTH_LEN": "2", "LLAMA_ARG_CACHE_REUSE": "32"}
    assert ids_of(lossy_cache_notes([], facts(OLD_ENGINE, env))) == [
        "lossy.shift_default",
        "lossy.cache_reuse",
        "lossy.synth",
    ]
