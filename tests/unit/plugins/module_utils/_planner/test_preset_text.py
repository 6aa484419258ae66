"""Spec section 2: config.env parsing, EXTRA_ARGS splitting, YAML presets."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import (
    PresetError,
    format_env,
    join_args,
    normalize_preset,
    parse_env,
    quote_value,
    split_args,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("CTX=8192\n", {"CTX": "8192"}, id="simple"),
        pytest.param("  # NAME=Qwen\n\nCTX = 1 \n", {"CTX": "1"}, id="comment-blank-trim"),
        pytest.param("export NGL=auto", {"NGL": "auto"}, id="export"),
        pytest.param("exportNGL=1", {"exportNGL": "1"}, id="export-needs-space"),
        pytest.param("A=b=c", {"A": "b=c"}, id="first-equals"),
        pytest.param("no equals here", {}, id="no-equals"),
        pytest.param('A="x y"', {"A": "x y"}, id="double-quotes"),
        pytest.param("A='x'", {"A": "x"}, id="single-quotes"),
        pytest.param("A=\"x'", {"A": "\"x'"}, id="mismatched-quotes-kept"),
        pytest.param('A="', {"A": '"'}, id="lone-quote"),
        pytest.param('A=""', {"A": ""}, id="empty-quoted"),
        pytest.param('A=""x""', {"A": '"x"'}, id="only-one-pair-removed"),
        pytest.param('EXTRA_ARGS=--jinja --chat-template-file "/etc/loki/tpl.jinja"',
                     {"EXTRA_ARGS": '--jinja --chat-template-file "/etc/loki/tpl.jinja"'}, id="internal-quotes-kept"),
        pytest.param("A=1\nA=2", {"A": "2"}, id="last-wins"),
        pytest.param("A=$HOME\\n", {"A": "$HOME\\n"}, id="no-expansion-no-escape"),
        pytest.param("A=1\r\nB=2\r\n", {"A": "1", "B": "2"}, id="crlf"),
        pytest.param("=x", {"": "x"}, id="empty-key"),
    ],
)
def test_parse_env(text, expected):
    assert parse_env(text) == expected


@pytest.mark.parametrize(
    ("value", "written"),
    [("", ""), ("a", "a"), ("a b", '"a b"'), ("a\tb", '"a\tb"'), ('say "hi"', 'say "hi"'), ("'x'", "\"'x'\""),
     (" lead", '" lead"')],
)
def test_quote_value(value, written):
    assert quote_value(value) == written


@pytest.mark.parametrize(
    "preset",
    [
        {"CTX": "8192", "EXTRA_ARGS": "--jinja -fa on", "EMPTY": "", "Q": "'quoted'", "SP": " padded "},
        {"A": "x"},
    ],
)
def test_format_env_round_trip(preset):
    text = format_env(preset)
    assert parse_env(text) == preset
    assert text.splitlines()[0].startswith(sorted(preset)[0] + "=")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("  \t\n ", [], id="blanks"),
        pytest.param("--jinja  -fa on", ["--jinja", "-fa", "on"], id="spaces"),
        pytest.param("a\tb\nc\rd", ["a", "b", "c", "d"], id="all-blanks"),
        pytest.param('--x="a b"', ["--x=a b"], id="quoted-concat"),
        pytest.param("'a \"b' c", ['a "b', "c"], id="other-quote-literal"),
        pytest.param('"" x', ["", "x"], id="empty-quoted-token"),
        pytest.param("''", [""], id="empty-single-quoted"),
        pytest.param('a""', ["a"], id="empty-quotes-after-text"),
        pytest.param('"unterminated rest', ["unterminated rest"], id="unterminated"),
        pytest.param("a\\ b", ["a\\", "b"], id="no-backslash-escape"),
        pytest.param('--chat-template-file "/etc/loki/tpl.jinja"', ["--chat-template-file", "/etc/loki/tpl.jinja"],
                     id="path"),
    ],
)
def test_split_args(text, tokens):
    assert split_args(text) == tokens


@pytest.mark.parametrize(
    "tokens",
    [
        ["--jinja", "-fa", "on"],
        ["a b", "it's", 'say "x"', "", "mixed 'single' and \"double\""],
        ["'", '"', "'\"", "\"'"],
        ["tab\there", "new\nline"],
    ],
)
def test_join_args_round_trip(tokens):
    assert split_args(join_args(tokens)) == tokens


def test_join_args_loki_forms():
    assert join_args(["", "a b", "it's x", "plain"]) == "\"\" 'a b' \"it's x\" plain"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({"ctx": 8192}, {"CTX": "8192"}, id="int-and-upper"),
        pytest.param({"Side_Slot": True}, {"SIDE_SLOT": "on"}, id="true-on"),
        pytest.param({"CUDA_GRAPH_OPT": False}, {"CUDA_GRAPH_OPT": "off"}, id="false-off"),
        pytest.param({"NGL": None}, {"NGL": ""}, id="none-empty"),
        pytest.param({"CACHE_RAM": -1}, {"CACHE_RAM": "-1"}, id="negative"),
        pytest.param({"TEMP": 0.7}, {"TEMP": "0.7"}, id="float"),
        pytest.param({"EXTRA_ARGS": "--jinja"}, {"EXTRA_ARGS": "--jinja"}, id="string"),
        pytest.param({" host ": "127.0.0.1"}, {"HOST": "127.0.0.1"}, id="key-trimmed"),
    ],
)
def test_normalize_preset(data, expected):
    assert normalize_preset(data) == expected


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        pytest.param({"extra_args": ["--jinja"]}, "EXTRA_ARGS", id="list"),
        pytest.param({"SPEC": {"mode": "auto"}}, "SPEC", id="dict"),
        pytest.param({1: "x"}, "keys must be", id="non-string-key"),
        pytest.param({"": "x"}, "keys must be", id="empty-key"),
        pytest.param(["CTX"], "mapping", id="not-a-mapping"),
    ],
)
def test_normalize_preset_rejects(data, fragment):
    with pytest.raises(PresetError, match=fragment):
        normalize_preset(data)


def test_preset_error_is_value_error():
    assert issubclass(PresetError, ValueError)
