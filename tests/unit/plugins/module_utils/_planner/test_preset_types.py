"""The typed reading of every preset key (docs/planner.md, "Preset keys: types and ranges").

One table per key: valid values (kept as written), normalised ones (read, with a preset.normalised note) and
invalid ones (a PlanError naming the key and the value). The engine's flag table comes from the REAL
captured help texts (tests/unit/fixtures/engine/README.md); ``UNKNOWN`` is an engine whose help is unknown.
"""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import HIDDEN, PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_types import (
    KNOWN_KEYS,
    api_key_problem,
    read_preset,
)
from tests.unit.support.paths import FIXTURES as CAPTURED

FIXTURES = CAPTURED / "engine"
CURRENT = read_flag_table((FIXTURES / "llama-server-11434.0.0-cpu.help.txt").read_text())
OLD = read_flag_table((FIXTURES / "llama-server-llama-cpp-python-0.3.16-cpu.help.txt").read_text())
UNKNOWN = read_flag_table("")
C_INT_MAX = "2147483647"


def read(key, value, table=CURRENT):
    return read_preset({key: value}, table)


# key -> [(written, read)]: accepted; read == written means "kept as written, no note".
VALID = {
    "CTX": [("0", "0"), ("512", "512"), ("32768", "32768"), (C_INT_MAX, C_INT_MAX), ("32k", "32768"),
            ("4K", "4096"), ("1m", "1048576"), ("+512", "512"), ("0512", "512"), (" 8192 ", "8192")],
    "BATCH": [("1", "1"), ("2048", "2048"), ("2k", "2048")],
    "UBATCH": [("512", "512"), ("1K", "1024")],
    "PORT": [("1", "1"), ("8080", "8080"), ("65535", "65535"), ("08080", "8080"), ("+80", "80")],
    "HOST": [("0.0.0.0", "0.0.0.0"), ("127.0.0.1", "127.0.0.1"), ("::", "::"), ("::1", "::1"),
             ("[::1]", "::1"), ("fe80::0001", "fe80::1"), ("localhost", "localhost"), ("gpu-01.lan", "gpu-01.lan"),
             ("127.0.0.1,::1", "127.0.0.1,::1"), ("/run/llama/main.sock", "/run/llama/main.sock"),
             ("0.0.0.0\n", "0.0.0.0")],
    "PARALLEL": [("1", "1"), ("4", "4"), ("auto", "-1"), ("AUTO", "-1"), ("-1", "-1")],
    "NGL": [("0", "0"), ("999", "999"), ("28", "28"), ("auto", "auto"), ("all", "all"), ("ALL", "all"),
            ("Auto", "auto")],
    "KV_TYPE": [("f16", "f16"), ("q8_0", "q8_0"), ("Q8_0", "q8_0"), ("IQ4_NL", "iq4_nl"), ("bf16", "bf16"),
                ("f16 ", "f16")],
    "KV_TYPE_K": [("q4_0", "q4_0"), ("F32", "f32")],
    "KV_TYPE_V": [("q5_1", "q5_1")],
    "REASONING": [("on", "on"), ("off", "off"), ("auto", "auto"), ("yes", "on"), ("TRUE", "on"), ("1", "on"),
                  ("enabled", "on"), ("none", "none"), ("disabled", "disabled"), ("Off", "Off")],
    "REASONING_BUDGET": [("-1", "-1"), ("0", "0"), ("512", "512"), ("+512", "512")],
    "CUDA_VISIBLE_DEVICES": [("0", "0"), ("0,1", "0,1"), ("1,0", "1,0"), ("-1", "-1"), ("all", ""),
                             ("GPU-8d3c1f2e-1111-2222-3333-444455556666", "GPU-8d3c1f2e-1111-2222-3333-444455556666"),
                             ("GPU-0", "GPU-0"), ("MIG-GPU-8d3c1f2e/1/0", "MIG-GPU-8d3c1f2e/1/0")],
    "SIDE_SLOT": [("on", "on"), ("off", "off"), ("yes", "on"), ("oui", "on"), ("ON", "on"), ("0", "off"),
                  ("non", "off")],
    "SLOT_PERSIST": [("true", "on"), ("no", "off")],
    "CACHE_ISOLATE": [("off", "off"), ("on", "on"), ("0", "off"), ("false", "off")],
    "LOAD_GUARD": [("off", "off"), ("on", "on"), ("non", "off"), ("1", "on")],
    "METRICS": [("on", "on"), ("YES", "on"), ("0", "off"), ("Off", "off")],
    "EXTERNAL": [("0", "0"), ("1", "1"), ("off", "0"), ("false", "0"), ("No", "0"), ("non", "0")],
    "CHAT_TEMPLATE": [("gemma", "gemma"), ("chatml", "chatml"), ("granite-4.0", "granite-4.0"),
                      ("/etc/llama/templates/gemma.jinja", "/etc/llama/templates/gemma.jinja"),
                      (" llama3 ", "llama3")],
}

INVALID = {
    "CTX": ["4k2", "-1", "abc", "2147483648", "3000000k", "1.5k", "32 k", "0x100", "１２", "٣٢"],
    "BATCH": ["0", "-5", "x", "2048.0"],
    "UBATCH": ["0", "half"],
    "PORT": ["0", "65536", "99999", "80a", "-80", "8k", "８０８０"],
    "HOST": ["0.0.0.0 --foo", "0.0.0.0\n--x", "a,,b", ",", "my_host", "10.0.0.300", "010.0.0.1", "relative.sock",
             "-h", "[::1", "host name"],
    "PARALLEL": ["0", "x", "-2", "2k", "4 slots"],
    "NGL": ["99%", "-1", "most", "1e3", "2147483648"],
    "KV_TYPE": ["q9_9", "fp16", "q8", "f 16"],
    "KV_TYPE_K": ["int8"],
    "KV_TYPE_V": ["q4"],
    "REASONING": ["high", "maybe", "think"],
    "REASONING_BUDGET": ["-2", "lots", "2147483648"],
    "CUDA_VISIBLE_DEVICES": ["0, 1", "0,", "gpu0", "0;1", "first"],
    "SIDE_SLOT": ["enabled", "2", "maybe"],
    "SLOT_PERSIST": ["persist"],
    "CACHE_ISOLATE": ["of"],
    "LOAD_GUARD": ["disabled"],
    "METRICS": ["enabled", "prometheus"],
    "EXTERNAL": ["true", "yes", "on", "2"],
    "CHAT_TEMPLATE": ["Gemma", "gemma4", "templates/gemma.jinja", "{% for m in messages %}", "/etc/llama/",
                      "/etc/llama/t\n.jinja"],
}

# Keys whose invalid values the spec ignores with a note: left to their rule, as written, no error here.
LEFT_TO_RULES = {
    "THREADS": "x", "THREADS_BATCH": "-3", "CACHE_RAM": "lots", "CTX_CHECKPOINTS": "-1", "CKPT_MIN_STEP": "0",
    "FIT_TARGET": "bad", "OP_OFFLOAD_MIN_BATCH": "0", "CUDA_LAUNCH_QUEUES": "8x", "CUDA_GRAPH_OPT": "maybe",
    "SPEC": "turbo", "SPEC_N_MAX": "999", "SPEC_SAMPLING": "wild", "SPLIT_MODE": "diagonal",
    "REASONING_PRESERVE": "perhaps", "MODEL_DRAFT": "nothing-here", "ENGINE": "vllm",
}


def test_tables_cover_every_typed_key():
    assert set(VALID) == set(INVALID)
    typed = set(VALID) | set(LEFT_TO_RULES) | {"MODEL", "BIN", "MMPROJ", "API_KEY", "EXTRA_ARGS"}
    planned = {k for k in KNOWN_KEYS if k not in (
        "TEMP", "TOP_P", "TOP_K", "MIN_P", "PRESENCE_PENALTY", "REPEAT_PENALTY", "REASONING_ECHO",
        "REASONING_EFFORT", "QUANT", "EXTERNAL_URL", "EXTERNAL_MODEL", "EXTERNAL_KEY", "EXTERNAL_VISION",
        "STRATA_CONFIG", "NAME")}
    assert typed == planned


@pytest.mark.parametrize(("key", "written", "expected"),
                         [(k, w, r) for k, cases in VALID.items() for w, r in cases])
def test_valid_values(key, written, expected):
    typed = read(key, written)
    assert typed.values[key] == expected
    changed = expected not in (written.strip(), written.strip().lower()) or (
        key in ("KV_TYPE", "KV_TYPE_K", "KV_TYPE_V", "NGL", "REASONING") and expected != written.strip())
    notes = [n for n in typed.notes if n.id in ("preset.normalised", "preset.parallel_auto")]
    if key == "PARALLEL" and written.lower() in ("auto", "-1"):
        assert [n.id for n in notes] == ["preset.parallel_auto"]
    elif changed:
        assert [(n.id, n.code) for n in notes] == [("preset.normalised", key)]
        assert written.strip() in notes[0].text
    else:
        assert notes == []


@pytest.mark.parametrize(("key", "written"), [(k, w) for k, values in INVALID.items() for w in values])
def test_invalid_values_name_key_value_and_accepted_form(key, written):
    with pytest.raises(PlanError) as caught:
        read(key, written)
    err = caught.value
    assert err.key == key
    assert err.value == written.strip()
    assert str(err).startswith(f"{key}={written.strip()!r} is not valid; accepted: ")


@pytest.mark.parametrize(("key", "written"), sorted(LEFT_TO_RULES.items()))
def test_keys_the_spec_ignores_with_a_note_are_left_to_their_rule(key, written):
    typed = read(key, written)
    assert typed.values[key] == written
    assert typed.notes == []


@pytest.mark.parametrize("table", [CURRENT, OLD, UNKNOWN], ids=["current", "old", "unknown"])
def test_blank_values_are_the_defaults(table):
    typed = read_preset(dict.fromkeys(set(VALID) | set(LEFT_TO_RULES), "  "), table)
    assert typed.notes == []
    # Typed keys: blanks are no value (the default applies); the spec's noted keys keep them for their rule.
    assert typed.values == {**dict.fromkeys(VALID, ""), **dict.fromkeys(LEFT_TO_RULES, "  ")}


# ----------------------------------------------------------------- what depends on the engine


def test_parallel_auto_on_an_engine_without_an_automatic_count():
    typed = read("PARALLEL", "auto", OLD)
    assert typed.values["PARALLEL"] == "1"
    assert typed.notes[0].id == "preset.parallel_auto"
    assert "no automatic slot count" in typed.notes[0].text
    with pytest.raises(PlanError, match="no automatic slot count"):
        read("PARALLEL", "-1", OLD)
    assert read("PARALLEL", "-1", UNKNOWN).values["PARALLEL"] == "1"


def test_host_lists_only_where_the_engine_takes_them():
    assert read("HOST", "127.0.0.1,::1", CURRENT).values["HOST"] == "127.0.0.1,::1"
    with pytest.raises(PlanError, match="single address"):
        read("HOST", "127.0.0.1,::1", OLD)
    assert read("HOST", "127.0.0.1,::1", UNKNOWN).values["HOST"] == "127.0.0.1,::1"


def test_kv_types_come_from_the_engine_else_the_spec():
    narrow = read_flag_table("-ctk,  --cache-type-k TYPE              KV cache data type for K\n"
                             "                                        allowed values: f16, q8_0\n")
    assert read("KV_TYPE", "q8_0", narrow).values["KV_TYPE"] == "q8_0"
    with pytest.raises(PlanError, match="one of f16, q8_0"):
        read("KV_TYPE", "q4_0", narrow)
    assert read("KV_TYPE", "q4_0", UNKNOWN).values["KV_TYPE"] == "q4_0"
    with pytest.raises(PlanError, match="iq4_nl, q5_0, q5_1"):
        read("KV_TYPE", "q9_9", UNKNOWN)


# ----------------------------------------------------------------- keys that are no Loki keys


@pytest.mark.parametrize(("key", "suggestion"), [("CTXX", "CTX"), ("KV_TYP", "KV_TYPE"), ("ctx", "CTX"),
                                                 ("PARRALEL", "PARALLEL"), ("Ngl", "NGL")])
def test_a_typo_of_a_key_is_refused_with_the_key_it_resembles(key, suggestion):
    with pytest.raises(PlanError) as caught:
        read_preset({key: "1"}, CURRENT)
    assert caught.value.key == key
    assert str(caught.value).endswith(suggestion + "?")


@pytest.mark.parametrize("key", ["DESCRIPTION", "OWNER", "X_TEAM"])
def test_a_key_close_to_none_is_ignored_with_a_note(key):
    typed = read_preset({key: "anything"}, CURRENT)
    assert [(n.id, n.code) for n in typed.notes] == [("preset.unknown_key", key)]
    assert typed.values[key] == "anything"


# ----------------------------------------------------------------- the API key never shows


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("s3cret-key", ""),
        ("  s3cret  ", ""),
        ("two words", "space"),
        ("line\nbreak", "line break"),
        ("tab\there", "space"),
        ("#comment", "starts with #"),
        ("a,b", "comma"),
        ("   ", "empty"),
        ("nul\x00", "control"),
    ],
)
def test_api_key_problems(key, problem):
    found = api_key_problem(key)
    assert (problem in found) if problem else found == ""


def test_a_bad_api_key_is_refused_without_showing_it():
    secret = "very secret"
    with pytest.raises(PlanError) as caught:
        read_preset({"API_KEY": secret}, CURRENT)
    assert caught.value.key == "API_KEY"
    assert caught.value.value == HIDDEN
    assert secret not in str(caught.value)
    assert "very" not in str(caught.value)
