"""systemd unit quoting: ExecStart words and Environment assignments.

The expected strings follow systemd.syntax(7) / systemd.service(5): C-style
escapes inside double quotes, "%%" for a literal percent sign (specifiers),
"$$" for a literal dollar sign in command lines (no expansion in Environment=).
"""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_quoting import (
    UnitValueError,
    environment_assignment,
    environment_lines,
    exec_start,
    quote_exec_word,
)


@pytest.mark.parametrize(
    ("word", "quoted"),
    [
        pytest.param("-m", "-m", id="plain-flag"),
        pytest.param("/srv/models/m.gguf", "/srv/models/m.gguf", id="path"),
        pytest.param("0.0.0.0", "0.0.0.0", id="address"),
        pytest.param("mmap+mlock", "mmap+mlock", id="plus"),
        pytest.param("", '""', id="empty"),
        pytest.param("/srv/my model.gguf", '"/srv/my model.gguf"', id="space"),
        pytest.param('say "hi"', '"say \\"hi\\""', id="double-quote"),
        pytest.param("it's", '"it\'s"', id="single-quote"),
        pytest.param("a\\b", '"a\\\\b"', id="backslash"),
        pytest.param("100%", '"100%%"', id="percent-specifier"),
        pytest.param("$HOME", '"$$HOME"', id="dollar"),
        pytest.param("${X}", '"$${X}"', id="dollar-brace"),
        pytest.param("line\nbreak", '"line\\nbreak"', id="newline"),
        pytest.param("tab\there", '"tab\\there"', id="tab"),
        pytest.param("bell\x07", '"bell\\a"', id="c-escape"),
        pytest.param("esc\x1b", '"esc\\x1b"', id="control-hex"),
        pytest.param(";", '";"', id="semicolon-not-a-separator"),
        pytest.param("{\"a\": 1}", '"{\\"a\\": 1}"', id="json"),
        pytest.param("héllo", '"héllo"', id="non-ascii"),
    ],
)
def test_quote_exec_word(word, quoted):
    assert quote_exec_word(word) == quoted


def test_exec_start_joins_words():
    argv = ["/opt/llama/bin/llama-server", "-m", "/srv/a b.gguf", "--alias", "50%"]
    assert exec_start(argv) == '/opt/llama/bin/llama-server -m "/srv/a b.gguf" --alias "50%%"'


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="empty"),
        pytest.param(["llama-server"], id="relative"),
        pytest.param(["/bin/x", "a\0b"], id="nul"),
    ],
)
def test_exec_start_refuses(argv):
    with pytest.raises(UnitValueError):
        exec_start(argv)


def test_executable_with_space_is_quoted():
    assert exec_start(["/opt/llama server/llama-server"]) == '"/opt/llama server/llama-server"'


@pytest.mark.parametrize(
    ("key", "value", "assignment"),
    [
        ("CUDA_VISIBLE_DEVICES", "0,1", '"CUDA_VISIBLE_DEVICES=0,1"'),
        ("LLAMA_ARG_CHAT_TEMPLATE_KWARGS", '{"x": true}', '"LLAMA_ARG_CHAT_TEMPLATE_KWARGS={\\"x\\": true}"'),
        ("X", "50%", '"X=50%%"'),
        ("X", "$keep", '"X=$keep"'),
        ("X", "", '"X="'),
    ],
)
def test_environment_assignment(key, value, assignment):
    assert environment_assignment(key, value) == assignment


@pytest.mark.parametrize("key", ["", "1X", "A-B", "A B", "A=B"])
def test_environment_assignment_refuses_bad_names(key):
    with pytest.raises(UnitValueError, match="not a valid environment variable name"):
        environment_assignment(key, "v")


def test_environment_lines_keep_order():
    assert environment_lines({"B": "1", "A": "2"}) == ['Environment="B=1"', 'Environment="A=2"']
