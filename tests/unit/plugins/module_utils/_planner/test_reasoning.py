"""REASONING, REASONING_BUDGET and REASONING_PRESERVE (spec section 10)."""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.reasoning import (
    reasoning_active,
    reasoning_args,
    reasoning_preserve_args,
)

REASONING_HELP = "--reasoning [on|off|auto]          use reasoning\n--reasoning-budget N   thinking budget\n"
OLD_HELP = "--reasoning-budget N   thinking budget\n--reasoning-format FMT\n"
PRESERVE_HELP = "--reasoning-preserve, --no-reasoning-preserve   keep past reasoning\n"
UNSUPPORTED_NOTE = Note("reasoning.unsupported", "this engine does not know --reasoning: cannot disable reasoning")

OFF_WORDS = ["off", "none", "false", "0", "no", "disable", "disabled"]
OFF_VARIANTS = [
    pytest.param(variant, id=f"{word}-{kind}")
    for word in OFF_WORDS
    for kind, variant in (("lower", word), ("upper", word.upper()), ("title", word.title()), ("padded", f"  {word} "))
]


# --- 10.1 / 10.2 REASONING and its budget ----------------------------------

ACTIVE_CASES = [
    pytest.param({"REASONING": "on"}, ["--reasoning", "on", "--reasoning-budget", "-1"], id="on-default-budget"),
    pytest.param({"REASONING": "auto"}, ["--reasoning", "auto", "--reasoning-budget", "-1"], id="auto"),
    pytest.param({"REASONING": "  deepseek "}, ["--reasoning", "deepseek", "--reasoning-budget", "-1"], id="trimmed"),
    pytest.param({"REASONING": "ON"}, ["--reasoning", "ON", "--reasoning-budget", "-1"], id="case-kept"),
    pytest.param({"REASONING": "00"}, ["--reasoning", "00", "--reasoning-budget", "-1"], id="not-exactly-zero"),
    pytest.param({"REASONING": "offf"}, ["--reasoning", "offf", "--reasoning-budget", "-1"], id="not-exactly-off"),
    pytest.param(
        {"REASONING": "on", "REASONING_BUDGET": "2048"},
        ["--reasoning", "on", "--reasoning-budget", "2048"],
        id="explicit-budget",
    ),
    pytest.param(
        {"REASONING": "on", "REASONING_BUDGET": "0"},
        ["--reasoning", "on", "--reasoning-budget", "0"],
        id="zero-budget-verbatim",
    ),
    pytest.param(
        {"REASONING": "on", "REASONING_BUDGET": " 512 "},
        ["--reasoning", "on", "--reasoning-budget", " 512 "],
        id="budget-verbatim-untrimmed",
    ),
    pytest.param(
        {"REASONING": "on", "REASONING_BUDGET": "lots"},
        ["--reasoning", "on", "--reasoning-budget", "lots"],
        id="budget-not-validated",
    ),
    pytest.param(
        {"REASONING": "on", "REASONING_BUDGET": ""},
        ["--reasoning", "on", "--reasoning-budget", "-1"],
        id="empty-budget-default",
    ),
]


@pytest.mark.parametrize(("preset", "args"), ACTIVE_CASES)
def test_active_reasoning_with_flag_known(preset, args):
    assert reasoning_args(preset, HostFacts(help=REASONING_HELP)) == (args, [])


@pytest.mark.parametrize(("preset", "args"), ACTIVE_CASES)
def test_active_reasoning_on_an_unknown_engine_follows_the_spec(preset, args):
    # No help text proves nothing: spec 10.1's form (no help check) is kept.
    assert reasoning_args(preset, HostFacts(help="")) == (args, [])


@pytest.mark.parametrize(("preset", "args"), ACTIVE_CASES)
@pytest.mark.parametrize(
    "help_text",
    [
        pytest.param(OLD_HELP, id="only-reasoning-dash-flags"),
        pytest.param("--reasoning\n", id="no-trailing-space"),
    ],
)
def test_active_reasoning_without_flag_notes(preset, args, help_text):
    # Deliberate difference from spec 10.1 ("no help check"): an engine without --reasoning exits
    # on it (llama.cpp of August 2025: "error: invalid argument: --reasoning"), and its
    # --reasoning-budget takes only -1 or 0. Nothing is passed; the note names the value.
    assert args
    flags, notes = reasoning_args(preset, HostFacts(help=help_text))
    assert flags == []
    assert [(n.id, n.code) for n in notes] == [("reasoning.unsupported", "active")]
    assert f"REASONING={preset['REASONING'].strip()}" in notes[0].text


@pytest.mark.parametrize(
    "preset",
    [
        pytest.param({}, id="absent"),
        pytest.param({"REASONING": ""}, id="empty"),
        pytest.param({"REASONING": "   "}, id="blank"),
        pytest.param({"REASONING_BUDGET": "2048"}, id="budget-alone"),
    ],
)
@pytest.mark.parametrize("help_text", ["", REASONING_HELP], ids=["no-help", "help"])
def test_absent_reasoning_is_silent(preset, help_text):
    assert reasoning_args(preset, HostFacts(help=help_text)) == ([], [])


@pytest.mark.parametrize("value", OFF_VARIANTS)
def test_off_like_with_flag_known(value):
    preset = {"REASONING": value, "REASONING_BUDGET": "2048"}
    assert reasoning_args(preset, HostFacts(help=REASONING_HELP)) == (["--reasoning", "off"], [])


@pytest.mark.parametrize("value", OFF_VARIANTS)
@pytest.mark.parametrize(
    "help_text",
    [
        pytest.param("", id="unknown-engine"),
        pytest.param(OLD_HELP, id="only-reasoning-dash-flags"),
        pytest.param("--reasoning\n", id="no-trailing-space"),
    ],
)
def test_off_like_without_flag_notes(value, help_text):
    assert reasoning_args({"REASONING": value}, HostFacts(help=help_text)) == ([], [UNSUPPORTED_NOTE])


@pytest.mark.parametrize(
    ("value", "active"),
    [
        ("", False),
        ("  ", False),
        *[(word, False) for word in OFF_WORDS],
        (" Disabled ", False),
        ("on", True),
        ("deepseek", True),
        ("n", True),
    ],
)
def test_reasoning_active(value, active):
    assert reasoning_active(value) is active


# --- 10.3 REASONING_PRESERVE ---------------------------------------------------


def preserve(value: str | None, extra=(), help_text=PRESERVE_HELP, arg_env=None):
    preset = {} if value is None else {"REASONING_PRESERVE": value}
    facts = HostFacts(help=help_text, arg_env=arg_env or {})
    return reasoning_preserve_args(preset, list(extra), facts)


def note(note_id: str, text: str) -> list[Note]:
    return [Note(note_id, text)]


UNSUPPORTED = note("preserve.unsupported", "this engine does not know --reasoning-preserve: REASONING_PRESERVE ignored")
KWARGS_EXTRA = note(
    "preserve.kwargs_extra", "--chat-template-kwargs already sets preserve_reasoning: REASONING_PRESERVE ignored"
)
ENV = note("preserve.env", "LLAMA_ARG_REASONING_PRESERVE is set: REASONING_PRESERVE ignored")
KWARGS_ENV = note(
    "preserve.kwargs_env", "LLAMA_ARG_CHAT_TEMPLATE_KWARGS already sets preserve_reasoning: REASONING_PRESERVE ignored"
)
KWARGS_ON = '{"preserve_reasoning": true}'

PRESERVE_VALUE_CASES = [
    pytest.param(None, [], [], id="absent"),
    pytest.param("", [], [], id="empty"),
    pytest.param("   ", [], [], id="blank"),
    pytest.param("on", ["--reasoning-preserve"], [], id="on"),
    pytest.param("ON", ["--reasoning-preserve"], [], id="on-upper"),
    pytest.param(" On ", ["--reasoning-preserve"], [], id="on-padded"),
    pytest.param("off", ["--no-reasoning-preserve"], [], id="off"),
    pytest.param("OFF", ["--no-reasoning-preserve"], [], id="off-upper"),
    pytest.param(
        "yes", [], note("preserve.invalid", "REASONING_PRESERVE=yes unreadable (on or off): ignored"), id="yes"
    ),
    pytest.param("1", [], note("preserve.invalid", "REASONING_PRESERVE=1 unreadable (on or off): ignored"), id="one"),
    pytest.param(
        " Maybe ",
        [],
        note("preserve.invalid", "REASONING_PRESERVE= Maybe  unreadable (on or off): ignored"),
        id="garbage-raw-value-in-note",
    ),
]


@pytest.mark.parametrize(("value", "args", "notes"), PRESERVE_VALUE_CASES)
def test_preserve_values(value, args, notes):
    assert preserve(value) == (args, notes)


INVALID_ONLY = note("preserve.invalid", "REASONING_PRESERVE=garbage unreadable (on or off): ignored")


@pytest.mark.parametrize(
    ("extra", "help_text", "arg_env"),
    [
        pytest.param([], "", {}, id="unsupported-engine"),
        pytest.param(["--reasoning-preserve"], PRESERVE_HELP, {}, id="extra-flag"),
        pytest.param(["--chat-template-kwargs", KWARGS_ON], PRESERVE_HELP, {}, id="extra-kwargs"),
        pytest.param([], PRESERVE_HELP, {"LLAMA_ARG_REASONING_PRESERVE": "1"}, id="env"),
        pytest.param([], PRESERVE_HELP, {"LLAMA_ARG_CHAT_TEMPLATE_KWARGS": KWARGS_ON}, id="env-kwargs"),
    ],
)
def test_unreadable_value_stops_at_invalid_note(extra, help_text, arg_env):
    assert preserve("garbage", extra, help_text, arg_env) == ([], INVALID_ONLY)


FIRST_MATCH_CASES = [
    # 1. engine lacks the flag: noted even when EXTRA or the env would decide.
    pytest.param([], "", {}, [], UNSUPPORTED, id="unknown-engine"),
    pytest.param([], "--reasoning-preserve only\n", {}, [], UNSUPPORTED, id="help-lacks-no-form"),
    pytest.param(["--reasoning-preserve"], "", {}, [], UNSUPPORTED, id="unsupported-before-extra"),
    pytest.param([], "", {"LLAMA_ARG_REASONING_PRESERVE": "1"}, [], UNSUPPORTED, id="unsupported-before-env"),
    # 2. EXTRA carries either flag: silent.
    pytest.param(["--reasoning-preserve"], PRESERVE_HELP, {}, [], [], id="extra-preserve"),
    pytest.param(["--no-reasoning-preserve"], PRESERVE_HELP, {}, [], [], id="extra-no-preserve"),
    pytest.param(["--reasoning-preserve=on"], PRESERVE_HELP, {}, [], [], id="extra-equals-form"),
    pytest.param(
        ["--no-reasoning-preserve", "--chat-template-kwargs", KWARGS_ON],
        PRESERVE_HELP,
        {"LLAMA_ARG_REASONING_PRESERVE": "1"},
        [],
        [],
        id="extra-flag-beats-kwargs-and-env",
    ),
    # 3. EXTRA chat-template kwargs mention preserve_reasoning.
    pytest.param(["--chat-template-kwargs", KWARGS_ON], PRESERVE_HELP, {}, [], KWARGS_EXTRA, id="extra-kwargs"),
    pytest.param(
        [f"--chat-template-kwargs={KWARGS_ON}"], PRESERVE_HELP, {}, [], KWARGS_EXTRA, id="extra-kwargs-equals"
    ),
    pytest.param(
        ["--chat-template-kwargs", '{"a": 1}', "-c", "1", "--chat-template-kwargs", '{"preserve_reasoning": false}'],
        PRESERVE_HELP,
        {},
        [],
        KWARGS_EXTRA,
        id="extra-kwargs-any-occurrence",
    ),
    pytest.param(
        ["--chat-template-kwargs", KWARGS_ON],
        PRESERVE_HELP,
        {"LLAMA_ARG_REASONING_PRESERVE": "1"},
        [],
        KWARGS_EXTRA,
        id="extra-kwargs-beats-env",
    ),
    pytest.param(
        ["--chat-template-kwargs", '{"enable_thinking": false}'],
        PRESERVE_HELP,
        {},
        ["--reasoning-preserve"],
        [],
        id="extra-kwargs-without-key-emits",
    ),
    pytest.param(["--chat-template-kwargs"], PRESERVE_HELP, {}, ["--reasoning-preserve"], [], id="trailing-kwargs"),
    pytest.param(["preserve_reasoning"], PRESERVE_HELP, {}, ["--reasoning-preserve"], [], id="loose-token-not-kwargs"),
    # 4. LLAMA_ARG_REASONING_PRESERVE set.
    pytest.param([], PRESERVE_HELP, {"LLAMA_ARG_REASONING_PRESERVE": "0"}, [], ENV, id="env-any-value"),
    pytest.param(
        [],
        PRESERVE_HELP,
        {"LLAMA_ARG_REASONING_PRESERVE": "on", "LLAMA_ARG_CHAT_TEMPLATE_KWARGS": KWARGS_ON},
        [],
        ENV,
        id="env-beats-env-kwargs",
    ),
    pytest.param([], PRESERVE_HELP, {"LLAMA_ARG_REASONING_PRESERVE": ""}, ["--reasoning-preserve"], [], id="env-empty"),
    # 5. LLAMA_ARG_CHAT_TEMPLATE_KWARGS mentions preserve_reasoning.
    pytest.param([], PRESERVE_HELP, {"LLAMA_ARG_CHAT_TEMPLATE_KWARGS": KWARGS_ON}, [], KWARGS_ENV, id="env-kwargs"),
    pytest.param(
        [],
        PRESERVE_HELP,
        {"LLAMA_ARG_CHAT_TEMPLATE_KWARGS": '{"enable_thinking": true}'},
        ["--reasoning-preserve"],
        [],
        id="env-kwargs-without-key-emits",
    ),
    # 6. Nothing in the way: the flag.
    pytest.param(["-c", "1"], PRESERVE_HELP, {}, ["--reasoning-preserve"], [], id="emit"),
]


@pytest.mark.parametrize(("extra", "help_text", "arg_env", "args", "notes"), FIRST_MATCH_CASES)
def test_preserve_first_match(extra, help_text, arg_env, args, notes):
    assert preserve("on", extra, help_text, arg_env) == (args, notes)


def test_preserve_off_emits_no_form():
    assert preserve("off", ["-c", "1"]) == (["--no-reasoning-preserve"], [])


def test_preserve_off_also_blocked_by_env():
    assert preserve("off", arg_env={"LLAMA_ARG_REASONING_PRESERVE": "1"}) == ([], ENV)
