"""Hybrid-model checkpoints (--ctx-checkpoints, --checkpoint-min-step): spec section 12.4."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.checkpoints import (
    ckpt_args,
    ckpt_count,
    ckpt_mib,
    ckpt_slots,
    engine_build_notice,
    ram_tight,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from tests.unit.support.models import HYBRID_48

GIB = 1 << 30
HELP = "--ctx-checkpoints N  --checkpoint-min-step N"

# Hybrid: 48 blocks, attention every 4th -> 36 recurrent layers.
# Recurrent state (f32) = 36 * ((4-1) * (4096 + 2*16*128) + 128*4096) * 4 = 79 036 416 bytes
# = 75.375 MiB -> 76 MiB per checkpoint.
HYBRID = HYBRID_48
HYBRID_CKPT_MIB = 76
# Hybrid by architecture name only, no ssm keys: the size falls back to 200 MiB.
ARCH_ONLY = GGUFInfo(arch="qwen35", block_count=40, head_count_kv=8, key_len=128, val_len=128)
DENSE = GGUFInfo(arch="llama", block_count=48, head_count_kv=8, key_len=128, val_len=128)

OLD_BUILD = 10000
# 128 GiB RAM, 64 GiB free (a quarter = 16 384 MiB), a 20 GiB model: RAM is not tight.
BASE = HostFacts(
    help=HELP,
    gguf=HYBRID,
    engine_build=OLD_BUILD,
    ram_mib=131072,
    ram_avail_mib=65536,
    model_bytes=20 * GIB,
)
DENSE_FACTS = replace(BASE, gguf=DENSE)


def facts(**changes) -> HostFacts:
    return replace(BASE, **changes)


def notice(build: int = OLD_BUILD) -> str:
    return (
        f"engine b{build}: hybrid-model checkpoints (Qwen3.5/3.6, Qwen3-Next…) are evicted too early there — "
        "up to ~8 k tokens recomputed at each resume. Fixed from b10864."
    )


def applied(worst: int, build: int = OLD_BUILD) -> str:
    return (
        f"{notice(build)} → --checkpoint-min-step 2048: exact checkpoints closer together, "
        f"~{worst} MiB of host RAM at most. CKPT_MIN_STEP=<tokens> to fix."
    )


RAM_TEXT = (
    f"{notice()} No tighter spacing by default: RAM unknown or already taken by the model "
    "(CKPT_MIN_STEP=2048 to force it)."
)
AUTO_STEP = ["--checkpoint-min-step", "2048"]


def summary(result):
    """(args, [(id, code)]) of a ckpt_args result."""
    args, notes = result
    return args, [(n.id, n.code) for n in notes]


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("build", "has_notice"),
    [
        pytest.param(0, False, id="unknown"),
        pytest.param(-1, False, id="negative"),
        pytest.param(5000, True, id="floor"),
        pytest.param(10863, True, id="last-affected"),
        pytest.param(10864, False, id="fixed"),
        pytest.param(11000, False, id="newer"),
    ],
)
def test_engine_build_notice(build, has_notice):
    assert engine_build_notice(build) == (notice(build) if has_notice else "")


@pytest.mark.parametrize(
    ("preset", "extra", "arg_env", "expected"),
    [
        pytest.param({}, [], {}, 32, id="engine-default"),
        pytest.param({"CTX_CHECKPOINTS": " 12 "}, [], {}, 12, id="preset"),
        pytest.param({"CTX_CHECKPOINTS": "0"}, [], {}, 0, id="preset-zero"),
        pytest.param({"CTX_CHECKPOINTS": "abc"}, [], {}, 32, id="preset-unreadable-ignored"),
        pytest.param({"CTX_CHECKPOINTS": "-3"}, [], {}, 32, id="preset-negative-ignored"),
        pytest.param({"CTX_CHECKPOINTS": "2147483648"}, [], {}, 32, id="preset-beyond-c-int-ignored"),
        pytest.param({"CTX_CHECKPOINTS": "12"}, [], {"LLAMA_ARG_CTX_CHECKPOINTS": "10"}, 10, id="env-beats-preset"),
        pytest.param({}, [], {"LLAMA_ARG_CTX_CHECKPOINTS": " 10 "}, 10, id="env-trimmed"),
        pytest.param({}, [], {"LLAMA_ARG_CTX_CHECKPOINTS": "many"}, -1, id="env-unparsable"),
        pytest.param({}, [], {"LLAMA_ARG_CTX_CHECKPOINTS": "-3"}, -1, id="env-negative"),
        pytest.param({}, ["-ctxcp", "16"], {"LLAMA_ARG_CTX_CHECKPOINTS": "10"}, 16, id="extra-beats-env"),
        pytest.param({}, ["--ctx-checkpoints=8"], {}, 8, id="extra-long-equals"),
        pytest.param({}, ["--swa-checkpoints", "4"], {}, 4, id="extra-swa"),
        pytest.param({}, ["-ctxcp", "x"], {}, -1, id="extra-unparsable"),
        pytest.param({}, ["-ctxcp", "4", "--ctx-checkpoints", "6"], {}, 6, id="extra-last-wins"),
    ],
)
def test_ckpt_count(preset, extra, arg_env, expected):
    assert ckpt_count(preset, extra, arg_env) == expected


@pytest.mark.parametrize(
    ("preset", "extra", "expected"),
    [
        pytest.param({}, [], 1, id="empty"),
        pytest.param({"PARALLEL": "  "}, [], 1, id="blank"),
        pytest.param({"PARALLEL": "3"}, [], 3, id="three"),
        pytest.param({"PARALLEL": " 3 "}, [], 3, id="three-trimmed"),
        pytest.param({"PARALLEL": "auto"}, [], 4, id="auto"),
        pytest.param({"PARALLEL": "-1"}, [], 4, id="minus-one"),
        pytest.param({"PARALLEL": "0"}, [], 4, id="zero"),
        pytest.param({"PARALLEL": "auto"}, ["-np", "2"], 2, id="extra-beats-preset"),
        pytest.param({}, ["--parallel=5"], 5, id="extra-equals"),
        pytest.param({}, ["--parallel", "auto"], 4, id="extra-auto"),
    ],
)
def test_ckpt_slots(preset, extra, expected):
    assert ckpt_slots(preset, extra) == expected


@pytest.mark.parametrize(
    ("gguf", "expected"),
    [
        pytest.param(HYBRID, HYBRID_CKPT_MIB, id="from-ssm-keys"),
        pytest.param(ARCH_ONLY, 200, id="no-recurrent-state"),
        pytest.param(None, 200, id="no-metadata"),
        # Exactly 1 MiB: 1 recurrent layer, no conv, state 128 x inner 2048 x 4 bytes = 1 048 576.
        pytest.param(
            GGUFInfo(block_count=1, key_len=1, val_len=1, hybrid=True, ssm_state=128, ssm_inner=2048), 1,
            id="exact-mib-not-rounded-up",
        ),
    ],
)
def test_ckpt_mib(gguf, expected):
    assert ckpt_mib(gguf) == expected


@pytest.mark.parametrize(
    ("ram_mib", "model_bytes", "tight"),
    [
        # 0.7 * 32 768 MiB = 24 051 816 857.6 bytes (float comparison).
        pytest.param(32768, 24051816857, False, id="just-below"),
        pytest.param(32768, 24051816858, True, id="just-above"),
        pytest.param(32768, 24 * GIB, True, id="24-of-32"),
        pytest.param(131072, 20 * GIB, False, id="20-of-128"),
        pytest.param(0, 24 * GIB, False, id="ram-unknown"),
        pytest.param(32768, 0, False, id="model-size-unknown"),
    ],
)
def test_ram_tight(ram_mib, model_bytes, tight):
    assert ram_tight(HostFacts(ram_mib=ram_mib, model_bytes=model_bytes)) is tight


# --------------------------------------------------------------------------- part A: CTX_CHECKPOINTS


@pytest.mark.parametrize(
    ("value", "extra", "host", "args", "note"),
    [
        pytest.param("16", [], DENSE_FACTS, ["--ctx-checkpoints", "16"], None, id="set"),
        pytest.param(" 16 ", [], DENSE_FACTS, ["--ctx-checkpoints", "16"], None, id="trimmed"),
        pytest.param("0", [], DENSE_FACTS, ["--ctx-checkpoints", "0"], None, id="zero-disables"),
        pytest.param("+8", [], DENSE_FACTS, ["--ctx-checkpoints", "8"], None, id="plus-sign"),
        pytest.param(
            " abc ", [], DENSE_FACTS, [],
            ("ckpt.invalid", "CTX_CHECKPOINTS=abc unreadable (a number of checkpoints per slot, ≥ 0): ignored"),
            id="unreadable-trimmed-in-note",
        ),
        pytest.param(
            "-1", [], DENSE_FACTS, [],
            ("ckpt.invalid", "CTX_CHECKPOINTS=-1 unreadable (a number of checkpoints per slot, ≥ 0): ignored"),
            id="negative",
        ),
        pytest.param(
            "1.5", [], replace(DENSE_FACTS, help=""), [],
            ("ckpt.invalid", "CTX_CHECKPOINTS=1.5 unreadable (a number of checkpoints per slot, ≥ 0): ignored"),
            id="unreadable-before-help",
        ),
        # --ctx-checkpoints is read with std::stoi: beyond a C int the engine would exit at start (fuzz finding).
        pytest.param("2147483647", [], DENSE_FACTS, ["--ctx-checkpoints", "2147483647"], None, id="c-int-max"),
        pytest.param(
            "2147483648", [], DENSE_FACTS, [],
            ("ckpt.invalid", "CTX_CHECKPOINTS=2147483648 unreadable (a number of checkpoints per slot, ≥ 0): ignored"),
            id="beyond-c-int",
        ),
        pytest.param(
            "16", [], replace(DENSE_FACTS, help="--checkpoint-min-step"), [],
            ("ckpt.unsupported", "this engine does not know --ctx-checkpoints: CTX_CHECKPOINTS ignored"),
            id="engine-without-flag",
        ),
        pytest.param("16", ["-ctxcp", "4"], DENSE_FACTS, [], None, id="extra-short-silent"),
        pytest.param("16", ["--ctx-checkpoints=4"], DENSE_FACTS, [], None, id="extra-long-silent"),
        pytest.param("16", ["--swa-checkpoints", "4"], DENSE_FACTS, [], None, id="extra-swa-silent"),
        pytest.param(
            "16", ["-ctxcp", "4"], replace(DENSE_FACTS, arg_env={"LLAMA_ARG_CTX_CHECKPOINTS": "8"}), [], None,
            id="extra-beats-env",
        ),
        pytest.param(
            "16", [], replace(DENSE_FACTS, arg_env={"LLAMA_ARG_CTX_CHECKPOINTS": "8"}), [],
            ("ckpt.env", "LLAMA_ARG_CTX_CHECKPOINTS is set: CTX_CHECKPOINTS ignored"),
            id="env",
        ),
    ],
)
def test_part_a_ctx_checkpoints(value, extra, host, args, note):
    result_args, notes = ckpt_args({"CTX_CHECKPOINTS": value}, extra, host)
    assert result_args == args
    assert [(n.id, n.text) for n in notes] == ([note] if note else [])


# --------------------------------------------------------------------------- part A': RAM advice

# 24 GiB model in 32 GiB of RAM: tight. Build 11000 keeps part C quiet.
TIGHT = facts(ram_mib=32768, model_bytes=24 * GIB, engine_build=11000)


def advice(model_gib: int, ram_gib: int, each: int) -> str:
    return (
        f"hybrid model of {model_gib} GiB for {ram_gib} GiB of RAM: up to 32 checkpoints (~{each} MiB each) "
        "take from the page cache of the weights. CTX_CHECKPOINTS=8 to 16 if throughput drops."
    )


@pytest.mark.parametrize(
    ("preset", "extra", "host", "text"),
    [
        pytest.param({}, [], TIGHT, advice(24, 32, HYBRID_CKPT_MIB), id="tight"),
        pytest.param({"CTX_CHECKPOINTS": "  "}, [], TIGHT, advice(24, 32, HYBRID_CKPT_MIB), id="blank-key"),
        # Integer shifts, not rounded GiB: 24 051 816 858 bytes >> 30 = 22 (22.4 GiB); 32 768 MiB >> 10 = 32.
        pytest.param({}, [], replace(TIGHT, model_bytes=24051816858), advice(22, 32, HYBRID_CKPT_MIB),
                     id="shifted-sizes"),
        pytest.param({}, [], replace(TIGHT, gguf=ARCH_ONLY), advice(24, 32, 200), id="arch-only-fallback-size"),
        pytest.param({}, [], replace(TIGHT, engine_build=0), advice(24, 32, HYBRID_CKPT_MIB), id="any-build"),
        pytest.param({}, [], replace(TIGHT, model_bytes=24051816857), None, id="not-tight"),
        pytest.param({}, [], replace(TIGHT, gguf=DENSE), None, id="not-hybrid"),
        pytest.param({}, [], replace(TIGHT, gguf=None), None, id="no-metadata"),
        pytest.param({}, [], replace(TIGHT, help="--checkpoint-min-step"), None, id="engine-without-flag"),
        pytest.param({}, ["-ctxcp", "8"], TIGHT, None, id="extra-flag"),
        pytest.param({}, ["--swa-checkpoints=8"], TIGHT, None, id="extra-swa"),
        pytest.param({}, [], replace(TIGHT, arg_env={"LLAMA_ARG_CTX_CHECKPOINTS": "8"}), None, id="env"),
        pytest.param({"CTX_CHECKPOINTS": "8"}, [], TIGHT, None, id="key-set"),
    ],
)
def test_part_a_prime_ram_advice(preset, extra, host, text):
    notes = ckpt_args(preset, extra, host)[1]
    advice_notes = [n.text for n in notes if n.id == "ckpt.ram_advice"]
    assert advice_notes == ([text] if text else [])


# --------------------------------------------------------------------------- part B: CKPT_MIN_STEP

REFUSED = (
    "CKPT_MIN_STEP={v} refused (a number of tokens > 0; 0 would let the engine drop the checkpoint at the start "
    "of the conversation): engine default"
)


@pytest.mark.parametrize(
    ("value", "extra", "host", "args", "note"),
    [
        pytest.param("4096", [], DENSE_FACTS, ["--checkpoint-min-step", "4096"], None, id="set-dense"),
        pytest.param(" 4096 ", [], replace(DENSE_FACTS, engine_build=0), ["--checkpoint-min-step", "4096"], None,
                     id="trimmed-any-build"),
        pytest.param("1", [], facts(engine_build=20000), ["--checkpoint-min-step", "1"], None, id="new-engine"),
        pytest.param("0", [], DENSE_FACTS, [], ("step.refused", REFUSED.format(v="0")), id="zero"),
        pytest.param("-5", [], DENSE_FACTS, [], ("step.refused", REFUSED.format(v="-5")), id="negative"),
        pytest.param(" abc ", [], DENSE_FACTS, [], ("step.refused", REFUSED.format(v="abc")), id="text"),
        # --checkpoint-min-step is read with std::stoi: beyond a C int the engine would exit (fuzz finding).
        pytest.param("2147483647", [], DENSE_FACTS, ["--checkpoint-min-step", "2147483647"], None, id="c-int-max"),
        pytest.param("2147483648", [], DENSE_FACTS, [], ("step.refused", REFUSED.format(v="2147483648")),
                     id="beyond-c-int"),
        pytest.param("0", [], replace(DENSE_FACTS, help=""), [], ("step.refused", REFUSED.format(v="0")),
                     id="refused-before-help"),
        pytest.param(
            "4096", [], replace(DENSE_FACTS, help="--ctx-checkpoints"), [],
            ("step.unsupported", "this engine does not know --checkpoint-min-step: CKPT_MIN_STEP ignored"),
            id="engine-without-flag",
        ),
        pytest.param("4096", ["-cms", "512"], DENSE_FACTS, [], None, id="extra-short-silent"),
        pytest.param("4096", ["--checkpoint-min-step=512"], DENSE_FACTS, [], None, id="extra-long-silent"),
        pytest.param(
            "4096", [], replace(DENSE_FACTS, arg_env={"LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT": "512"}), [],
            ("step.env", "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT is set: CKPT_MIN_STEP ignored"),
            id="env",
        ),
    ],
)
def test_part_b_min_step(value, extra, host, args, note):
    result_args, notes = ckpt_args({"CKPT_MIN_STEP": value}, extra, host)
    assert result_args == args
    assert [(n.id, n.text) for n in notes] == ([note] if note else [])


@pytest.mark.parametrize("value", ["4096", "0"])
def test_part_b_returns_before_part_c(value):
    # Hybrid on an old engine would get the build notice; an explicit CKPT_MIN_STEP replaces it.
    notes = ckpt_args({"CKPT_MIN_STEP": value}, [], BASE)[1]
    assert all(n.id != "ckpt.notice" for n in notes)


def test_part_b_keeps_part_a_results():
    result = ckpt_args({"CTX_CHECKPOINTS": "abc", "CKPT_MIN_STEP": "0"}, [], BASE)
    assert summary(result) == ([], [("ckpt.invalid", ""), ("step.refused", "")])
    result = ckpt_args({"CTX_CHECKPOINTS": "8", "CKPT_MIN_STEP": "1024"}, [], BASE)
    assert summary(result) == (["--ctx-checkpoints", "8", "--checkpoint-min-step", "1024"], [])


def test_part_b_keeps_part_a_prime_advice():
    result = ckpt_args({"CKPT_MIN_STEP": "1024"}, [], replace(TIGHT, engine_build=OLD_BUILD))
    assert summary(result) == (["--checkpoint-min-step", "1024"], [("ckpt.ram_advice", "")])


# --------------------------------------------------------------------------- part C: automatic spacing


@pytest.mark.parametrize(
    "host",
    [
        pytest.param(facts(engine_build=0), id="build-unknown"),
        pytest.param(facts(engine_build=10864), id="build-fixed"),
        pytest.param(facts(gguf=DENSE), id="not-hybrid"),
        pytest.param(facts(gguf=None), id="no-metadata"),
    ],
)
def test_part_c_silent(host):
    assert ckpt_args({}, [], host) == ([], [])


@pytest.mark.parametrize(
    ("preset", "extra", "host", "args", "note"),
    [
        # 32 checkpoints x 1 slot x 76 MiB = 2432 MiB <= 65 536 // 4.
        pytest.param({}, [], BASE, AUTO_STEP, ("applied", applied(2432)), id="applied"),
        pytest.param({}, [], facts(engine_build=10863), AUTO_STEP, ("applied", applied(2432, 10863)),
                     id="build-10863"),
        # Hybrid by architecture: 32 x 200 MiB fallback = 6400 MiB.
        pytest.param({}, [], facts(gguf=ARCH_ONLY), AUTO_STEP, ("applied", applied(6400)), id="arch-only"),
        # A hand-written --ctx-checkpoints does not turn the spacing off; it sets the count: 16 x 76 = 1216.
        pytest.param({}, ["--ctx-checkpoints", "16"], BASE, AUTO_STEP, ("applied", applied(1216)),
                     id="extra-count"),
        pytest.param({}, ["-ctxcp=16"], BASE, AUTO_STEP, ("applied", applied(1216)), id="extra-count-equals"),
        pytest.param({}, ["--swa-checkpoints", "16"], BASE, AUTO_STEP, ("applied", applied(1216)), id="extra-swa"),
        pytest.param({}, [], facts(arg_env={"LLAMA_ARG_CTX_CHECKPOINTS": "10"}), AUTO_STEP, ("applied", applied(760)),
                     id="env-count"),
        # Slots multiply the lists: 32 x 3 x 76 = 7296; auto / -1 count 4: 32 x 4 x 76 = 9728.
        pytest.param({"PARALLEL": "3"}, [], BASE, AUTO_STEP, ("applied", applied(7296)), id="parallel-3"),
        pytest.param({"PARALLEL": "auto"}, [], BASE, AUTO_STEP, ("applied", applied(9728)), id="parallel-auto"),
        pytest.param({"PARALLEL": "-1"}, [], BASE, AUTO_STEP, ("applied", applied(9728)), id="parallel-minus-one"),
        pytest.param({"PARALLEL": "auto"}, ["-np", "2"], BASE, AUTO_STEP, ("applied", applied(4864)),
                     id="extra-parallel"),
        # RAM-free guard: worst must not exceed a quarter of the free RAM (integer division).
        pytest.param({}, [], facts(ram_avail_mib=9728), AUTO_STEP, ("applied", applied(2432)), id="free-boundary"),
        pytest.param({}, [], facts(ram_avail_mib=0), AUTO_STEP, ("applied", applied(2432)), id="free-unknown"),
        pytest.param(
            {}, [], facts(ram_avail_mib=9727), [],
            ("ram_free", f"{notice()} No tighter spacing by default: 32 checkpoints (~2432 MiB) would exceed a "
             "quarter of the free RAM (CKPT_MIN_STEP=2048 to force it)."),
            id="free-too-small",
        ),
        pytest.param(
            {"PARALLEL": "auto"}, [], facts(ram_avail_mib=32768), [],
            ("ram_free", f"{notice()} No tighter spacing by default: 128 checkpoints (~9728 MiB) would exceed a "
             "quarter of the free RAM (CKPT_MIN_STEP=2048 to force it)."),
            id="free-too-small-4-slots",
        ),
        # RAM unknown or taken by the model.
        pytest.param({}, [], facts(ram_mib=0), [], ("ram", RAM_TEXT), id="ram-unknown"),
        pytest.param({}, [], facts(model_bytes=0), [], ("ram", RAM_TEXT), id="model-size-unknown"),
        # Hand-set spacing, or an engine without the flag: the notice alone.
        pytest.param({}, ["-cms", "512"], BASE, [], ("plain", notice()), id="extra-step-short"),
        pytest.param({}, ["--checkpoint-min-step", "512"], BASE, [], ("plain", notice()), id="extra-step-long"),
        pytest.param({}, [], facts(arg_env={"LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT": "512"}), [], ("plain", notice()),
                     id="env-step"),
        pytest.param({}, [], facts(help="--ctx-checkpoints"), [], ("plain", notice()), id="engine-without-step"),
        # No checkpoints (or an unreadable count): spacing is pointless.
        pytest.param({}, ["-ctxcp", "0"], BASE, [], ("plain", notice()), id="extra-zero-checkpoints"),
        pytest.param({}, [], facts(arg_env={"LLAMA_ARG_CTX_CHECKPOINTS": "abc"}), [], ("plain", notice()),
                     id="env-count-unparsable"),
        pytest.param({}, [], facts(arg_env={"LLAMA_ARG_CTX_CHECKPOINTS": "-2"}), [], ("plain", notice()),
                     id="env-count-negative"),
    ],
)
def test_part_c_notice(preset, extra, host, args, note):
    result_args, notes = ckpt_args(preset, extra, host)
    assert result_args == args
    assert [(n.id, n.code, n.text) for n in notes] == [("ckpt.notice", *note)]


def test_part_c_zero_checkpoints_from_preset():
    # Part A writes --ctx-checkpoints 0; part C then has nothing to space.
    result_args, notes = ckpt_args({"CTX_CHECKPOINTS": "0"}, [], BASE)
    assert result_args == ["--ctx-checkpoints", "0"]
    assert [(n.id, n.code, n.text) for n in notes] == [("ckpt.notice", "plain", notice())]


def test_part_c_count_from_preset_and_unreadable_key_uses_default():
    result = ckpt_args({"CTX_CHECKPOINTS": "8"}, [], BASE)
    assert result[0] == ["--ctx-checkpoints", "8", *AUTO_STEP]
    assert result[1][-1].text == applied(8 * HYBRID_CKPT_MIB)
    # An unreadable CTX_CHECKPOINTS is ignored: the engine keeps 32.
    result = ckpt_args({"CTX_CHECKPOINTS": "many"}, [], BASE)
    assert summary(result) == (AUTO_STEP, [("ckpt.invalid", ""), ("ckpt.notice", "applied")])
    assert result[1][-1].text == applied(32 * HYBRID_CKPT_MIB)


def test_part_c_ram_tight_follows_the_advice():
    result_args, notes = ckpt_args({}, [], replace(TIGHT, engine_build=OLD_BUILD))
    assert result_args == []
    assert [(n.id, n.code) for n in notes] == [("ckpt.ram_advice", ""), ("ckpt.notice", "ram")]
    assert notes[1].text == RAM_TEXT


def test_part_c_env_count_beats_preset_count():
    # CTX_CHECKPOINTS=16 is noted as overridden; the engine keeps the variable's 4: 4 x 76 = 304 MiB.
    host = facts(arg_env={"LLAMA_ARG_CTX_CHECKPOINTS": "4"})
    result_args, notes = ckpt_args({"CTX_CHECKPOINTS": "16"}, [], host)
    assert result_args == AUTO_STEP
    assert [(n.id, n.code) for n in notes] == [("ckpt.env", ""), ("ckpt.notice", "applied")]
    assert notes[1].text == applied(304)
