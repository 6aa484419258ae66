"""Spec section 8.3: FIT_TARGET -> --fit-target."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.fit_target import (
    fit_target_args,
    parse_fit_target,
)
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE

# An engine that knows --fit-target but cannot fit layers itself (no 'auto', no --load-mode).
OLD_ENGINE_WITH_FIT_TARGET = OLD_ENGINE + "-fitt, --fit-target MiB0,MiB1,...       target margin per device for --fit\n"


@pytest.mark.parametrize(
    ("raw", "values", "raised"),
    [
        pytest.param("1024", [1024], False, id="one-value"),
        pytest.param("1024,3072", [1024, 3072], False, id="comma"),
        pytest.param("2048/1536", [2048, 1536], False, id="slash"),
        pytest.param("1024,2048/3072", [1024, 2048, 3072], False, id="mixed-separators"),
        pytest.param(" 2048 , 3072 ", [2048, 3072], False, id="spaces-around-fields"),
        pytest.param("\t4096/ 1024", [4096, 1024], False, id="tab-and-space"),
        pytest.param("256,3072", [1024, 3072], True, id="under-minimum-raised"),
        pytest.param("1023", [1024], True, id="just-under-minimum"),
        pytest.param("0", [1024], True, id="zero-raised"),
        pytest.param("1,2,3,4,5,6,7,8", [1024] * 8, True, id="eight-values"),
        pytest.param("9999999", [9999999], False, id="seven-digits"),
        pytest.param("0001024", [1024], False, id="seven-digits-leading-zeros"),
    ],
)
def test_parse_fit_target_valid(raw, values, raised):
    assert parse_fit_target(raw) == (values, raised, True)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param(",", id="separator-only"),
        pytest.param("1024,,2048", id="doubled-comma"),
        pytest.param("1024//2048", id="doubled-slash"),
        pytest.param("1024,/2048", id="doubled-mixed"),
        pytest.param(",1024", id="leading-comma"),
        pytest.param("/1024", id="leading-slash"),
        pytest.param("1024,", id="trailing-comma"),
        pytest.param("1024/", id="trailing-slash"),
        pytest.param("1024, ,2048", id="blank-field"),
        pytest.param("1,2,3,4,5,6,7,8,9", id="nine-values"),
        pytest.param("10000000", id="eight-digits"),
        pytest.param("00001024", id="eight-digits-leading-zeros"),
        pytest.param("1G,2G", id="units"),
        pytest.param("1024MiB", id="suffix"),
        pytest.param("10.5", id="decimal"),
        pytest.param("1e3", id="exponent"),
        pytest.param("1_024", id="underscore"),
        pytest.param("1024 2048", id="inner-space"),
        pytest.param("١٠٢٤", id="non-ascii-digits"),
        pytest.param("-1024", id="minus-sign"),
        pytest.param("+1024", id="plus-sign"),
        pytest.param("1024;2048", id="other-separator"),
    ],
)
def test_parse_fit_target_invalid(raw):
    assert parse_fit_target(raw) == ([], False, False)


def _facts(help_text: str = NEW_ENGINE, **arg_env: str) -> HostFacts:
    return HostFacts(help=help_text, arg_env=arg_env)


@pytest.mark.parametrize(
    ("preset", "place", "facts", "args", "note_text"),
    [
        pytest.param(
            {"FIT_TARGET": "1024,3072"},
            [],
            _facts(),
            ["--fit-target", "1024,3072"],
            "--fit-target 1024,3072 (FIT_TARGET, MiB free per card, in the engine's order) — "
            "check 'offloaded N/N layers' in the log",
            id="two-margins",
        ),
        pytest.param(
            {"FIT_TARGET": "256/3072"},
            [],
            _facts(),
            ["--fit-target", "1024,3072"],
            "--fit-target 1024,3072 (FIT_TARGET, MiB free per card, in the engine's order) — "
            "check 'offloaded N/N layers' in the log; margins under 1024 MiB raised to 1024",
            id="raised-and-normalised",
        ),
    ],
)
def test_fit_target_set_note(preset, place, facts, args, note_text):
    got_args, notes = fit_target_args(preset, place, facts)
    assert got_args == args
    assert len(notes) == 1
    assert notes[0].id == "fit.set"
    assert notes[0].code == ""
    assert notes[0].text == note_text


@pytest.mark.parametrize(
    ("preset", "place", "facts", "value"),
    [
        pytest.param({"FIT_TARGET": " 2048 "}, [], _facts(), "2048", id="trimmed-single"),
        pytest.param({"FIT_TARGET": "2048/1536"}, [], _facts(), "2048,1536", id="slash-to-comma"),
        pytest.param({"FIT_TARGET": "1024"}, [], _facts(), "1024", id="ctx-absent-means-32768"),
        pytest.param({"FIT_TARGET": "1024", "CTX": "65536"}, [], _facts(), "1024", id="ctx-number"),
        pytest.param({"FIT_TARGET": "1024", "CTX": "0"}, ["-c", "65536"], _facts(), "1024", id="extra-ctx-beats-ctx"),
        pytest.param({"FIT_TARGET": "1024", "NGL": "999"}, [], _facts(), "1024", id="ngl-999-becomes-auto"),
        pytest.param({"FIT_TARGET": "1024", "NGL": "auto"}, [], _facts(), "1024", id="ngl-auto"),
        pytest.param({"FIT_TARGET": "1024", "NGL": "40"}, ["-ngl", "auto"], _facts(), "1024", id="extra-ngl-auto"),
        pytest.param(
            {"FIT_TARGET": "1024,3072"}, ["--device", "CUDA1,CUDA0"], _facts(), "1024,3072", id="device-chosen"
        ),
        pytest.param({"FIT_TARGET": "1024"}, ["-sm", "layer"], _facts(), "1024", id="layer-split"),
        pytest.param(
            {"FIT_TARGET": "1024", "NGL": "auto"}, [], _facts(OLD_ENGINE_WITH_FIT_TARGET), "1024", id="old-engine-auto"
        ),
    ],
)
def test_fit_target_emitted(preset, place, facts, value):
    args, notes = fit_target_args(preset, place, facts)
    assert args == ["--fit-target", value]
    assert [n.id for n in notes] == ["fit.set"]
    assert notes[0].text.startswith(f"--fit-target {value} (FIT_TARGET, ")


@pytest.mark.parametrize(
    "preset",
    [
        pytest.param({}, id="absent"),
        pytest.param({"FIT_TARGET": ""}, id="empty"),
        pytest.param({"FIT_TARGET": "   "}, id="blank"),
    ],
)
def test_fit_target_silent(preset):
    assert fit_target_args(preset, ["-ngl", "40"], _facts("")) == ([], [])


IGNORED = [
    # invalid (checked first, before any capability)
    pytest.param({"FIT_TARGET": "1G,2G"}, [], _facts(""), "invalid", "1G,2G", id="invalid-beats-unsupported"),
    pytest.param({"FIT_TARGET": " -1024 "}, [], _facts(), "invalid", "-1024", id="invalid-raw-trimmed"),
    pytest.param({"FIT_TARGET": "1024,,2048"}, [], _facts(), "invalid", "1024,,2048", id="invalid-doubled"),
    pytest.param({"FIT_TARGET": "1,2,3,4,5,6,7,8,9"}, [], _facts(), "invalid", "1,2,3,4,5,6,7,8,9", id="invalid-nine"),
    # unsupported: an unknown flag would kill the engine
    pytest.param({"FIT_TARGET": "1024"}, [], _facts(OLD_ENGINE), "unsupported", "1024", id="unsupported-old"),
    pytest.param({"FIT_TARGET": "1024"}, [], _facts(""), "unsupported", "1024", id="unsupported-unknown-engine"),
    pytest.param(
        {"FIT_TARGET": "1024"}, ["-fitt", "2048"], _facts(""), "unsupported", "1024", id="unsupported-beats-extra"
    ),
    # extra: the user already set the margin
    pytest.param({"FIT_TARGET": "1024"}, ["-fitt", "2048"], _facts(), "extra", "1024", id="extra-fitt"),
    pytest.param({"FIT_TARGET": "1024"}, ["--fit-target=2048"], _facts(), "extra", "1024", id="extra-equals"),
    pytest.param(
        {"FIT_TARGET": "1024"},
        ["--fit-target", "2048"],
        _facts(LLAMA_ARG_FIT_TARGET="4096"),
        "extra",
        "1024",
        id="extra-beats-env",
    ),
    # env
    pytest.param({"FIT_TARGET": "1024"}, [], _facts(LLAMA_ARG_FIT_TARGET="4096"), "env", "1024", id="env"),
    pytest.param(
        {"FIT_TARGET": "1024", "CTX": "0"}, [], _facts(LLAMA_ARG_FIT_TARGET="4096"), "env", "1024", id="env-beats-ctx"
    ),
    # ctx: with a context that is not a positive number --fit may shrink it
    pytest.param({"FIT_TARGET": "1024,3072", "CTX": "0"}, [], _facts(), "ctx", "1024,3072", id="ctx-zero"),
    pytest.param({"FIT_TARGET": "1024", "CTX": "-1"}, [], _facts(), "ctx", "1024", id="ctx-negative"),
    pytest.param({"FIT_TARGET": "1024", "CTX": "big"}, [], _facts(), "ctx", "1024", id="ctx-text"),
    pytest.param({"FIT_TARGET": "1024", "CTX": "65536"}, ["-c", "0"], _facts(), "ctx", "1024", id="extra-c0-beats-ctx"),
    pytest.param({"FIT_TARGET": "1024", "CTX": "0", "NGL": "40"}, [], _facts(), "ctx", "1024", id="ctx-beats-blocked"),
    # blocked: --fit will not run
    pytest.param({"FIT_TARGET": "1024", "NGL": "40"}, [], _facts(), "blocked", "1024", id="blocked-ngl"),
    pytest.param({"FIT_TARGET": "1024", "NGL": "all"}, [], _facts(), "blocked", "1024", id="blocked-ngl-all"),
    pytest.param(
        {"FIT_TARGET": "1024", "NGL": "auto"},
        [],
        _facts(LLAMA_ARG_N_GPU_LAYERS="30"),
        "blocked",
        "1024",
        id="blocked-env-layers",
    ),
    pytest.param({"FIT_TARGET": "1024"}, ["--tensor-split", "0.9,0.1"], _facts(), "blocked", "1024", id="blocked-ts"),
    pytest.param({"FIT_TARGET": "1024"}, ["-cmoe"], _facts(), "blocked", "1024", id="blocked-cpu-moe"),
    pytest.param({"FIT_TARGET": "1024"}, ["--fit", "off"], _facts(), "blocked", "1024", id="blocked-fit-off"),
    pytest.param({"FIT_TARGET": "1024"}, [], _facts(LLAMA_ARG_FIT="off"), "blocked", "1024", id="blocked-env-fit"),
    pytest.param({"FIT_TARGET": "1024"}, ["-sm", "row"], _facts(), "blocked", "1024", id="blocked-sm-row"),
    pytest.param(
        {"FIT_TARGET": "1024"}, ["-sm", "tensor"], _facts(), "blocked", "1024", id="blocked-accepted-tensor-split"
    ),
]


@pytest.mark.parametrize(("preset", "place", "facts", "code", "raw"), IGNORED)
def test_fit_target_ignored(preset, place, facts, code, raw):
    args, notes = fit_target_args(preset, place, facts)
    assert args == []
    assert len(notes) == 1
    assert notes[0].id == "fit.ignored"
    assert notes[0].code == code
    assert notes[0].text.startswith(f"FIT_TARGET={raw} ignored: ")


@pytest.mark.parametrize(
    ("preset", "place", "facts", "text"),
    [
        pytest.param(
            {"FIT_TARGET": "1G"},
            [],
            _facts(),
            "FIT_TARGET=1G ignored: MiB per card, e.g. 1024,3072 (at most 8 values)",
            id="invalid",
        ),
        pytest.param(
            {"FIT_TARGET": "1024", "CTX": "0"},
            [],
            _facts(),
            'FIT_TARGET=1024 ignored: context "0" is not a fixed token count — --fit could shrink it to fit; '
            "set a numeric CTX",
            id="ctx-names-the-context",
        ),
        pytest.param(
            {"FIT_TARGET": "1024"},
            ["-sm", "row"],
            _facts(),
            "FIT_TARGET=1024 ignored: --fit inactive (-sm row), the margin would do nothing",
            id="blocked-names-the-reason",
        ),
        pytest.param(
            {"FIT_TARGET": "1024"},
            [],
            _facts(OLD_ENGINE_WITH_FIT_TARGET),
            "FIT_TARGET=1024 ignored: --fit inactive (GPU layers fixed at 999), the margin would do nothing",
            id="blocked-old-engine-empty-ngl-is-999",
        ),
    ],
)
def test_fit_target_ignored_text(preset, place, facts, text):
    notes = fit_target_args(preset, place, facts)[1]
    assert [n.text for n in notes] == [text]
