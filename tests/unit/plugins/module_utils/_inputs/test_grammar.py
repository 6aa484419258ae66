"""The forms of values (grammar.py): each check says why a value does not have its form, "" when it does."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs import grammar


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/var/lib/llamafleet", ""),
        ("/srv/llama%i", ""),  # written as %% into units
        ("/", ""),
        ("var/lib", "not absolute"),
        ("", "not absolute"),
        ("/var/lib/llamafleet\rExecStartPre=+/bin/sh", "holds '\\r'"),
        ("/var/lib/llamafleet\n", "holds '\\n'"),
        ("/srv/a b", "holds ' '"),
        ("/srv/a\\", "holds '\\\\'"),
        ('/srv/"a"', "holds '\"'"),
        ("/srv/\tllama", "holds '\\t'"),
        ("/srv/llamá", "holds 'á'"),
        ("/srv/../etc", "not normalised ('/etc')"),
        ("/srv//x", "not normalised ('/srv/x')"),
        ("/srv/x/", "not normalised ('/srv/x')"),
        ("//srv", "not normalised"),
        ("/srv/./x", "not normalised"),
        ("/" + "a" * 4100, "at most 4095"),
    ],
)
def test_path_problem(path, why):
    found = grammar.path_problem(path)
    assert (why in found) if why else found == ""


@pytest.mark.parametrize(
    ("name", "ok"),
    [("llamafleet", True), ("_svc", True), ("svc-1", True), ("a" * 32, True), ("a" * 33, False), ("1abc", False),
     ("llama\\", False), ("llama\n", False), ("llama$", False), ("a b", False), ("", False), ("root%i", False)],
)
def test_account(name, ok):
    assert (grammar.name_problem(grammar.ACCOUNT, name) == "") is ok


@pytest.mark.parametrize(
    ("name", "ok"),
    [("main", True), ("a.b_c-1", True), ("main\n", False), ("../../../../tmp/evil", False), ("-x", False),
     ("a" * 63, True), ("a" * 64, False), ("", False)],
)
def test_instance_name(name, ok):
    assert bool(grammar.INSTANCE_NAME.fullmatch(name)) is ok


@pytest.mark.parametrize(
    ("text", "why"),
    [("plain", ""), ("multi\nline \r ok", ""), ("nul\0", "NUL"), ("\udcff", "not valid UTF-8"),
     ("x" * 70000, "at most 65536")],
)
def test_text_problem(text, why):
    found = grammar.text_problem(text)
    assert (why in found) if why else found == ""


@pytest.mark.parametrize(
    ("text", "why"),
    [("ghcr.io/ggml-org/llama.cpp:server", ""), ("", "empty"), ("a b", "blank"), ("a\r", "blank or a control"),
     ("x\x7f", "control")],
)
def test_word_problem(text, why):
    found = grammar.word_problem(text)
    assert (why in found) if why else found == ""


@pytest.mark.parametrize(
    ("value", "why"),
    [(5, ""), (0, "outside 1 to 10"), (11, "outside"), (True, "not a number"), ("5", "not a number"), (2.5, "")],
)
def test_int_problem(value, why):
    found = grammar.int_problem(value, 1, 10)
    assert (why in found) if why else found == ""
