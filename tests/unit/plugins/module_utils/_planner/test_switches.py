"""Preset switches shared by several rules (spec sections 3, 13.1, 13.10)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import switches as sw


@pytest.mark.parametrize(
    ("value", "on"),
    [("on", True), ("ON", True), (" 1 ", True), ("true", True), ("Yes", True), ("oui", True), ("off", False),
     ("enabled", False), ("", False), (None, False)],
)
def test_loki_truthy(value, on):
    assert sw.loki_truthy(value) is on
    assert sw.side_slot_on({"SIDE_SLOT": value} if value is not None else {}) is on
    assert sw.slot_persist_on({"SLOT_PERSIST": value} if value is not None else {}) is on


@pytest.mark.parametrize(
    ("raw", "mode"),
    [("", "off"), (" OFF ", "off"), ("non", "off"), ("No", "off"), ("0", "off"), ("auto", "auto"), ("MTP", "mtp"),
     ("ngram", "ngram"), ("mtp+ngram", "mtp+ngram"), ("NGRAM+MTP", "mtp+ngram"), ("eagle", "?"), ("1", "?")],
)
def test_spec_mode(raw, mode):
    assert sw.spec_mode({"SPEC": raw}) == mode


def test_spec_mode_absent_is_off():
    assert sw.spec_mode({}) == "off"


@pytest.mark.parametrize(
    ("extra", "env", "user_set"),
    [
        ([], {}, False),
        (["--spec-type", "ngram-mod"], {}, True),
        (["--spec_type=x"], {}, True),
        (["-md", "d.gguf"], {}, True),
        (["--model-draft", "d.gguf"], {}, True),
        (["--spec-draft-model=x"], {}, True),
        (["-hfd", "r"], {}, True),
        (["-hfrd", "r"], {}, True),
        (["--spec-draft-hf", "r"], {}, True),
        (["--hf-repo-draft", "r"], {}, True),
        (["--spec-default"], {}, True),
        (["--spec-ngram-mod-n-match", "8"], {}, True),
        (["--spec_ngram_size=3"], {}, True),
        (["--spec-draft-n-max", "4"], {}, False),
        ([], {"LLAMA_ARG_SPEC_TYPE": "draft-mtp"}, True),
        ([], {"LLAMA_ARG_SPEC_DRAFT_MODEL": "x"}, True),
        ([], {"LLAMA_ARG_SPEC_DRAFT_HF_REPO": "x"}, True),
        ([], {"LLAMA_ARG_SPEC_DRAFT_N_MAX": "4"}, False),
    ],
)
def test_spec_user_set(extra, env, user_set):
    assert sw.spec_user_set(extra, env) is user_set


@pytest.mark.parametrize(
    ("raw", "key"),
    [("", ""), ("off", ""), ("LAYER", ""), ("non", ""), ("no", ""), ("0", ""), (" Tensor ", "tensor"), ("row", "?"),
     ("2", "?")],
)
def test_split_mode_key(raw, key):
    assert sw.split_mode_key({"SPLIT_MODE": raw}) == key
