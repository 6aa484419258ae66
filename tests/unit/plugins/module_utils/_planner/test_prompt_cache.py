"""Prompt cache (--cache-ram) and --slot-save-path: spec sections 12.1 and 12.2."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.prompt_cache import (
    cache_isolation_on,
    cache_ram_args,
    cache_ram_auto,
    cache_ram_off,
    cache_ram_setting,
    slot_save_args,
)
from tests.unit.support.models import HYBRID_48

MIB = 1 << 20
GIB = 1 << 30
HELP = "--cache-ram N  --slot-save-path PATH"
SLOT_DIR = "/var/lib/llamafleet/slots"

# Dense model: 48 layers x 8 KV heads x (128 + 128) dims, f16 (2 bytes)
# -> 48 * 8 * (128*2 + 128*2) = 196 608 bytes per token.
# At the default 32 768 tokens: 196 608 * 32 768 bytes = 6 GiB = 6144 MiB of KV.
DENSE = GGUFInfo(arch="llama", block_count=48, head_count_kv=8, key_len=128, val_len=128, context_length=131072)

# Hybrid model: 48 blocks, one attention layer in 4 -> 12 attention layers (4 KV heads each = 48 heads),
# 36 recurrent layers.  KV per token (f16): 48 * (256*2 + 256*2) = 49 152 bytes.
# Recurrent state (f32): conv = (4-1) * (4096 + 2*16*128) = 24 576;
# 36 * (24 576 + 128*4096) * 4 = 79 036 416 bytes.
HYBRID = HYBRID_48

# Baseline: 48 GiB VRAM, 128 GiB RAM (100 000 MiB free), a 20 GiB model.
# ceiling = min(131072 * 30 // 100, 100000 // 2) = min(39321, 50000) = 39321 MiB.
BASE = HostFacts(
    help=HELP,
    gguf=DENSE,
    vram_mib=49152,
    ram_mib=131072,
    ram_avail_mib=100000,
    model_bytes=20 * GIB,
)
CEILING = 39321
# Dense at 32 768 tokens: need = ceil(2.5 * 6144) = 15360 MiB.
DENSE_NEED = 15360


def facts(**changes) -> HostFacts:
    return replace(BASE, **changes)


# --------------------------------------------------------------------------- cache_ram_setting


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, ("", True, True), id="absent"),
        pytest.param("", ("", True, True), id="empty"),
        pytest.param("   ", ("", True, True), id="blank"),
        pytest.param("auto", ("", True, True), id="auto"),
        pytest.param("AUTO", ("", True, True), id="AUTO"),
        pytest.param(" Auto ", ("", True, True), id="auto-spaced"),
        pytest.param("-1", ("-1", False, True), id="unlimited"),
        pytest.param("0", ("0", False, True), id="off"),
        pytest.param("4096", ("4096", False, True), id="mib"),
        pytest.param(" 512 ", ("512", False, True), id="trimmed"),
        pytest.param("+7", ("7", False, True), id="plus-sign-reformatted"),
        pytest.param("007", ("7", False, True), id="leading-zeros-reformatted"),
        pytest.param("-2", ("", False, False), id="below-minus-one"),
        pytest.param("1.5", ("", False, False), id="float"),
        pytest.param("abc", ("", False, False), id="text"),
        pytest.param("4 096", ("", False, False), id="inner-space"),
        pytest.param("1_000", ("", False, False), id="underscore"),
        # --cache-ram is read with std::stoi: beyond a C int the engine would exit at start (fuzz finding).
        pytest.param("2147483647", ("2147483647", False, True), id="c-int-max"),
        pytest.param("2147483648", ("", False, False), id="beyond-c-int"),
    ],
)
def test_cache_ram_setting(raw, expected):
    preset = {} if raw is None else {"CACHE_RAM": raw}
    assert cache_ram_setting(preset) == expected


# --------------------------------------------------------------------------- cache_ram_auto


@pytest.mark.parametrize(
    ("preset", "extra", "host", "expected"),
    [
        # Step 1: every unknown input keeps the engine default.
        pytest.param({}, [], facts(vram_mib=0), (0, "NVIDIA VRAM unknown"), id="1-vram-unknown"),
        pytest.param({}, [], facts(vram_mib=-1), (0, "NVIDIA VRAM unknown"), id="1-vram-negative"),
        pytest.param({}, [], facts(gguf=None), (0, "GGUF metadata unreadable"), id="1-gguf-nil"),
        pytest.param({}, [], facts(ram_mib=0), (0, "RAM unknown"), id="1-ram-unknown"),
        pytest.param({}, [], facts(ram_avail_mib=0), (0, "RAM unknown"), id="1-ram-avail-unknown"),
        pytest.param({}, [], facts(model_bytes=0), (0, "model size unknown"), id="1-model-size-unknown"),
        # Step 2: weights or KV in host RAM.
        pytest.param({}, ["-ngl", "20"], BASE, (0, "GPU layers limited to 20"), id="2-ngl-limited"),
        pytest.param({"NGL": "30"}, [], BASE, (0, "GPU layers limited to 30"), id="2-ngl-preset"),
        pytest.param({}, ["-nkvo"], BASE, (0, "KV cache on CPU"), id="2-kv-on-cpu"),
        pytest.param({}, ["--cpu-moe"], BASE, (0, "experts on CPU"), id="2-cpu-moe"),
        pytest.param({}, ["-ot", "exps=CPU"], BASE, (0, "tensors on CPU (-ot)"), id="2-ot-cpu"),
        pytest.param(
            {}, [], facts(arg_env={"LLAMA_ARG_N_CPU_MOE": "10"}), (0, "--n-cpu-moe layers on CPU"), id="2-env"
        ),
        # 49 layers = 48 blocks + output: everything on the GPU, the estimate goes on.
        pytest.param({"NGL": "49"}, [], BASE, (DENSE_NEED, f"estimated need {DENSE_NEED} MiB, ceiling {CEILING} MiB"),
                     id="2-ngl-covers-model"),
        # Step 3: state size or context unknown.
        pytest.param({}, [], facts(gguf=GGUFInfo(block_count=48, head_count_kv=8)), (0, "state size unknown"),
                     id="3-no-head-length"),
        pytest.param({"CTX": "abc"}, [], BASE, (0, "state size unknown"), id="3-ctx-text"),
        pytest.param({"CTX": "-5"}, [], BASE, (0, "state size unknown"), id="3-ctx-negative"),
        pytest.param({"CTX": "0"}, [], facts(gguf=replace(DENSE, context_length=0)), (0, "state size unknown"),
                     id="3-ctx-zero-no-training-context"),
        # Step 4: 20 GiB + KV must fit in 90 % of VRAM.  With CTX=0 the training context (131 072) applies:
        # KV = 196 608 * 131 072 = 24 GiB; 20 + 24 = 44 GiB = 45 056 MiB > 0.9 * 49 152 = 44 236.8 MiB.
        pytest.param({"CTX": "0"}, [], BASE, (0, "model too big for VRAM: weights stay in RAM"),
                     id="4-too-big-for-vram"),
        # Same with 96 GiB of VRAM: need = ceil(2.5 * 24 576) = 61 440 MiB, capped at the ceiling (step 9).
        pytest.param({"CTX": "0"}, [], facts(vram_mib=98304),
                     (CEILING, f"estimated need 61440 MiB, ceiling {CEILING} MiB"), id="9-capped-by-ceiling"),
        # Steps 6 and 9: dense, default context.
        pytest.param({}, [], BASE, (DENSE_NEED, f"estimated need {DENSE_NEED} MiB, ceiling {CEILING} MiB"),
                     id="6-dense-default-ctx"),
        # EXTRA -c beats CTX: 65 536 tokens -> 12 GiB of KV -> need = 2.5 * 12 288 = 30 720 MiB.
        pytest.param({"CTX": "8192"}, ["-c", "65536"], BASE,
                     (30720, f"estimated need 30720 MiB, ceiling {CEILING} MiB"), id="6-extra-ctx"),
        # Effective KV types: q8_0 = 34/32 bytes -> 48 * 8 * (128 * 34/32 * 2) = 104 448 bytes per token,
        # x 32 768 = 3264 MiB, need = 2.5 * 3264 = 8160 MiB <= 8192 -> default is enough (step 8).
        pytest.param({"KV_TYPE": "q8_0"}, [], BASE, (0, "the default is enough (estimated need 8160 MiB)"),
                     id="8-kv-type-q8-default-enough"),
        pytest.param({}, ["-ctk", "q8_0", "-ctv", "q8_0"], BASE,
                     (0, "the default is enough (estimated need 8160 MiB)"), id="8-kv-type-from-extra"),
        pytest.param({}, [], facts(arg_env={"LLAMA_ARG_CACHE_TYPE_K": "q8_0", "LLAMA_ARG_CACHE_TYPE_V": "q8_0"}),
                     (0, "the default is enough (estimated need 8160 MiB)"), id="8-kv-type-from-env"),
        # One token of KV is 196 608 bytes = 0.1875 MiB; CTX=17 476 -> ceil(2.5 * 17 476 * 0.1875) = ceil(8191.875).
        pytest.param({"CTX": "17476"}, [], BASE, (0, "the default is enough (estimated need 8192 MiB)"),
                     id="8-need-equals-default"),
        # 17 477 tokens: ceil(2.5 * 17 477 * 196 608 / 2^20) = ceil(8192.34) = 8193 -> grown.
        pytest.param({"CTX": "17477"}, [], BASE, (8193, f"estimated need 8193 MiB, ceiling {CEILING} MiB"),
                     id="8-need-just-above-default"),
        # Step 7/8: ceiling = min(RAM * 30 // 100, free // 2).
        # 27 307 * 30 // 100 = 8192 -> too tight.
        pytest.param({}, [], facts(ram_mib=27307), (0, "free RAM too tight (ceiling 8192 MiB)"),
                     id="8-ceiling-equals-default"),
        # 27 310 * 30 // 100 = 8193 -> grown, capped at 8193.
        pytest.param({}, [], facts(ram_mib=27310), (8193, f"estimated need {DENSE_NEED} MiB, ceiling 8193 MiB"),
                     id="7-ceiling-from-ram-share"),
        # free RAM 20 000 -> 10 000 < 39 321.
        pytest.param({}, [], facts(ram_avail_mib=20000), (10000, f"estimated need {DENSE_NEED} MiB, ceiling 10000 MiB"),
                     id="7-ceiling-from-free-ram"),
        pytest.param({}, [], facts(ram_avail_mib=16385), (0, "free RAM too tight (ceiling 8192 MiB)"),
                     id="7-ceiling-free-ram-tight"),
    ],
)
def test_cache_ram_auto(preset, extra, host, expected):
    assert cache_ram_auto(preset, extra, host) == expected


@pytest.mark.parametrize(
    ("ctx", "need"),
    [
        # Step 5, hybrid: KV = 49 152 * ctx; + recurrent 79 036 416 * (min(32, ctx // 8192 + 1) + 1).
        # ctx 131 072: 6 GiB + 79 036 416 * 18 = 7 865 106 432 bytes -> ceil(2.5 * 7500.75) = 18 752 MiB.
        pytest.param("131072", 18752, id="17-checkpoints"),
        # ctx 300 000: 14 745 600 000 + 79 036 416 * 33 (cap 32 + current) = 17 353 801 728 bytes
        # = 16 549.875 MiB -> ceil(2.5 * 16 549.875) = 41 375 MiB, above the ceiling.
        pytest.param("300000", 41375, id="checkpoints-capped-at-32"),
        # ctx 100 000: 4 915 200 000 + 79 036 416 * 14 = 6 021 709 824 bytes = 5742.75 MiB -> ceil(14 356.875) = 14 357.
        pytest.param("100000", 14357, id="13-checkpoints"),
    ],
)
def test_cache_ram_auto_hybrid_counts_recurrent_checkpoints(ctx, need):
    host = facts(gguf=HYBRID, vram_mib=98304)
    mib, why = cache_ram_auto({"CTX": ctx}, [], host)
    assert why == f"estimated need {need} MiB, ceiling {CEILING} MiB"
    assert mib == min(need, CEILING)


def test_cache_ram_auto_never_exceeds_a_c_int():
    """Fuzz finding: absurd host readings (a state of PiB, RAM beyond 2^31 MiB) must not reach --cache-ram."""
    huge = facts(
        gguf=replace(DENSE, key_len=2**31 - 1, val_len=2**31 - 1),
        vram_mib=2**62,
        ram_mib=2**50,
        ram_avail_mib=2**50,
    )
    mib, why = cache_ram_auto({}, [], huge)
    assert mib == 2**31 - 1
    assert why.startswith("estimated need ")
    assert cache_ram_args({}, [], huge)[0] == ["--cache-ram", "2147483647"]


def test_cache_ram_auto_recurrent_is_what_makes_the_hybrid_need_bigger():
    # Same attention geometry without ssm keys: 6 GiB of KV only -> 2.5 * 6144 = 15 360 MiB.
    attention_only = replace(HYBRID, hybrid=False, full_attn_interval=0, head_count_kv=1)
    # 48 layers x 1 head x 1024 bytes = 49 152 bytes per token, as in the hybrid.
    mib = cache_ram_auto({"CTX": "131072"}, [], facts(gguf=attention_only, vram_mib=98304))[0]
    assert mib == 15360


# --------------------------------------------------------------------------- cache_ram_args

AUTO_NOTE = (
    f"prompt cache: --cache-ram {DENSE_NEED} (host RAM, exact copy of the state, never VRAM; "
    f"estimated need {DENSE_NEED} MiB, ceiling {CEILING} MiB). CACHE_RAM=<MiB> to fix, 0 to disable."
)


@pytest.mark.parametrize(
    ("value", "args"),
    [
        pytest.param("-1", ["--cache-ram", "-1"], id="unlimited"),
        pytest.param("0", ["--cache-ram", "0"], id="off"),
        pytest.param("4096", ["--cache-ram", "4096"], id="mib"),
        pytest.param(" 512 ", ["--cache-ram", "512"], id="trimmed"),
    ],
)
def test_cache_ram_args_manual(value, args):
    assert cache_ram_args({"CACHE_RAM": value}, [], BASE) == (args, [])


@pytest.mark.parametrize("value", ["", "auto", "AUTO"])
def test_cache_ram_args_auto_grows_with_note(value):
    args, notes = cache_ram_args({"CACHE_RAM": value}, [], BASE)
    assert args == ["--cache-ram", str(DENSE_NEED)]
    assert [(n.id, n.text) for n in notes] == [("cache.auto", AUTO_NOTE)]


def test_cache_ram_args_auto_absent_key():
    args, notes = cache_ram_args({}, [], BASE)
    assert args == ["--cache-ram", str(DENSE_NEED)]
    assert [n.id for n in notes] == ["cache.auto"]


def test_cache_ram_args_auto_silent_when_estimate_is_zero():
    assert cache_ram_args({}, [], facts(vram_mib=0)) == ([], [])
    assert cache_ram_args({"KV_TYPE": "q8_0"}, [], BASE) == ([], [])


@pytest.mark.parametrize("raw", ["-2", "1.5", "abc", " abc ", "2147483648"])
def test_cache_ram_args_invalid_keeps_raw_value(raw):
    args, notes = cache_ram_args({"CACHE_RAM": raw}, [], BASE)
    assert args == []
    assert [(n.id, n.text) for n in notes] == [
        ("cache.invalid", f"CACHE_RAM={raw} unreadable (a number of MiB, -1, 0 or auto): ignored")
    ]


def test_cache_ram_args_invalid_reported_even_without_help():
    notes = cache_ram_args({"CACHE_RAM": "abc"}, [], facts(help=""))[1]
    assert [n.id for n in notes] == ["cache.invalid"]


@pytest.mark.parametrize(
    ("value", "note_ids"),
    [
        pytest.param("4096", ["cache.unsupported"], id="manual-noted"),
        pytest.param("0", ["cache.unsupported"], id="zero-noted"),
        pytest.param("auto", [], id="auto-silent"),
        pytest.param("", [], id="empty-silent"),
    ],
)
def test_cache_ram_args_engine_without_flag(value, note_ids):
    args, notes = cache_ram_args({"CACHE_RAM": value}, [], facts(help="--slot-save-path"))
    assert args == []
    assert [n.id for n in notes] == note_ids
    if notes:
        assert notes[0].text == "this engine does not know --cache-ram: CACHE_RAM ignored"


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(["-cram", "2048"], id="short"),
        pytest.param(["--cache-ram", "2048"], id="long"),
        pytest.param(["--cache-ram=0"], id="equals"),
    ],
)
@pytest.mark.parametrize("value", ["4096", "auto"])
def test_cache_ram_args_extra_wins_silently(extra, value):
    host = facts(arg_env={"LLAMA_ARG_CACHE_RAM": "1024"})
    assert cache_ram_args({"CACHE_RAM": value}, extra, host) == ([], [])


@pytest.mark.parametrize(
    ("value", "note_ids"),
    [
        pytest.param("4096", ["cache.env"], id="manual-noted"),
        pytest.param("auto", [], id="auto-silent"),
    ],
)
def test_cache_ram_args_env_wins(value, note_ids):
    args, notes = cache_ram_args({"CACHE_RAM": value}, [], facts(arg_env={"LLAMA_ARG_CACHE_RAM": "1024"}))
    assert args == []
    assert [n.id for n in notes] == note_ids
    if notes:
        assert notes[0].text == "LLAMA_ARG_CACHE_RAM is set: CACHE_RAM ignored"


# --------------------------------------------------------------------------- cache_ram_off / isolation


@pytest.mark.parametrize(
    ("preset", "extra", "arg_env", "off"),
    [
        pytest.param({}, [], {}, False, id="nothing"),
        pytest.param({"CACHE_RAM": "0"}, [], {}, True, id="preset-zero"),
        pytest.param({"CACHE_RAM": " 0 "}, [], {}, True, id="preset-zero-spaced"),
        pytest.param({"CACHE_RAM": "00"}, [], {}, True, id="preset-zero-reformatted"),
        pytest.param({"CACHE_RAM": "auto"}, [], {}, False, id="preset-auto"),
        pytest.param({"CACHE_RAM": "abc"}, [], {}, False, id="preset-unreadable"),
        pytest.param({"CACHE_RAM": "4096"}, [], {}, False, id="preset-size"),
        pytest.param({}, [], {"LLAMA_ARG_CACHE_RAM": "0"}, True, id="env-zero"),
        pytest.param({}, [], {"LLAMA_ARG_CACHE_RAM": " 0 "}, True, id="env-zero-spaced"),
        pytest.param({"CACHE_RAM": "0"}, [], {"LLAMA_ARG_CACHE_RAM": "8192"}, False, id="env-beats-preset"),
        pytest.param({}, ["-cram", "0"], {}, True, id="extra-short"),
        pytest.param({}, ["--cache-ram=0"], {}, True, id="extra-equals"),
        pytest.param({"CACHE_RAM": "0"}, ["-cram", "4096"], {"LLAMA_ARG_CACHE_RAM": "0"}, False,
                     id="extra-beats-all"),
        pytest.param({}, ["-cram", "4096", "--cache-ram", "0"], {}, True, id="extra-last-wins"),
    ],
)
def test_cache_ram_off(preset, extra, arg_env, off):
    assert cache_ram_off(preset, extra, arg_env) is off


@pytest.mark.parametrize(
    ("value", "on"),
    [
        pytest.param(None, True, id="absent"),
        pytest.param("", True, id="empty"),
        pytest.param("on", True, id="on"),
        pytest.param("no", True, id="only-off-disables"),
        pytest.param("off", False, id="off"),
        pytest.param("OFF", False, id="OFF"),
        pytest.param(" Off ", False, id="Off-spaced"),
    ],
)
def test_cache_isolation_on(value, on):
    preset = {} if value is None else {"CACHE_ISOLATE": value}
    assert cache_isolation_on(preset) is on


# --------------------------------------------------------------------------- slot_save_args

SLOT_FACTS = HostFacts(help=HELP, slot_dir=SLOT_DIR)
LOCAL = {"HOST": "127.0.0.1"}
EMITTED = ["--slot-save-path", SLOT_DIR]
# SLOT_PERSIST accepted: loopback host, engine knows the flag, slot dir ready, no speculation.
PERSIST = {**LOCAL, "SLOT_PERSIST": "on"}


@pytest.mark.parametrize(
    ("preset", "extra", "host", "expected"),
    [
        pytest.param(LOCAL, [], SLOT_FACTS, EMITTED, id="loopback-isolation"),
        pytest.param(LOCAL, [], replace(SLOT_FACTS, slot_dir=""), [], id="no-slot-dir"),
        pytest.param(LOCAL, [], replace(SLOT_FACTS, help="--cache-ram"), [], id="engine-without-flag"),
        pytest.param(LOCAL, ["--slot-save-path", "/tmp/x"], SLOT_FACTS, [], id="extra-has-flag"),
        pytest.param(LOCAL, ["--slot-save-path=/tmp/x"], SLOT_FACTS, [], id="extra-has-flag-equals"),
        # Useless: isolation off or prompt cache off, and no SLOT_PERSIST.
        pytest.param({**LOCAL, "CACHE_ISOLATE": "off"}, [], SLOT_FACTS, [], id="isolate-off"),
        pytest.param({**LOCAL, "CACHE_ISOLATE": "OFF"}, [], SLOT_FACTS, [], id="isolate-OFF"),
        pytest.param({**LOCAL, "CACHE_RAM": "0"}, [], SLOT_FACTS, [], id="cache-off-preset"),
        pytest.param(LOCAL, ["-cram", "0"], SLOT_FACTS, [], id="cache-off-extra"),
        pytest.param(LOCAL, [], replace(SLOT_FACTS, arg_env={"LLAMA_ARG_CACHE_RAM": "0"}), [], id="cache-off-env"),
        pytest.param({**LOCAL, "CACHE_RAM": "4096"}, [], SLOT_FACTS, EMITTED, id="cache-sized"),
        # SLOT_PERSIST accepted makes it useful on its own.
        pytest.param({**PERSIST, "CACHE_ISOLATE": "off"}, [], SLOT_FACTS, EMITTED, id="persist-isolate-off"),
        pytest.param({**PERSIST, "CACHE_RAM": "0"}, [], SLOT_FACTS, EMITTED, id="persist-cache-off"),
        # SLOT_PERSIST refused (speculation) does not help.
        pytest.param({**PERSIST, "CACHE_ISOLATE": "off", "SPEC": "mtp"}, [], SLOT_FACTS, [],
                     id="persist-refused-isolate-off"),
        pytest.param({**PERSIST, "SPEC": "mtp"}, [], SLOT_FACTS, EMITTED, id="persist-refused-isolation-on"),
        # Host forms.
        pytest.param({"HOST": "[::1]"}, [], SLOT_FACTS, EMITTED, id="host-ipv6-brackets"),
        pytest.param({"HOST": "::1"}, [], SLOT_FACTS, EMITTED, id="host-ipv6"),
        pytest.param({"HOST": "localhost"}, [], SLOT_FACTS, EMITTED, id="host-localhost"),
        pytest.param({"HOST": " 127.0.0.1 "}, [], SLOT_FACTS, EMITTED, id="host-with-spaces"),
        pytest.param({"HOST": "0.0.0.0"}, [], SLOT_FACTS, [], id="host-any"),
        pytest.param({"HOST": "192.168.1.10"}, [], SLOT_FACTS, [], id="host-lan"),
        pytest.param({"HOST": "127.0.0.2"}, [], SLOT_FACTS, EMITTED, id="host-other-loopback-address"),
        pytest.param({"HOST": "127.0.0.1,::1"}, [], SLOT_FACTS, EMITTED, id="host-loopback-list"),
        pytest.param({"HOST": "127.0.0.1,0.0.0.0"}, [], SLOT_FACTS, [], id="host-list-with-any"),
        pytest.param({"HOST": "/run/llama/main.sock"}, [], SLOT_FACTS, EMITTED, id="host-unix-socket"),
        pytest.param({}, [], SLOT_FACTS, [], id="host-default-any"),
        pytest.param({"HOST": "0.0.0.0"}, ["--host", "127.0.0.1"], SLOT_FACTS, EMITTED, id="extra-host-loopback"),
        pytest.param({"HOST": "0.0.0.0"}, ["--host=localhost"], SLOT_FACTS, EMITTED, id="extra-host-equals"),
        pytest.param(LOCAL, ["--host", "0.0.0.0"], SLOT_FACTS, [], id="extra-host-any-beats-preset"),
        # An API key makes a reachable server acceptable.
        pytest.param({"HOST": "0.0.0.0", "API_KEY": "secret"}, [], SLOT_FACTS, EMITTED, id="preset-key"),
        pytest.param({"HOST": "0.0.0.0", "API_KEY": "   "}, [], SLOT_FACTS, [], id="blank-key"),
        pytest.param({"HOST": "0.0.0.0"}, [], replace(SLOT_FACTS, api_key_file="/etc/llama/key"), EMITTED,
                     id="key-file"),
    ],
)
def test_slot_save_args(preset, extra, host, expected):
    assert slot_save_args(preset, extra, host) == expected
