"""Spec section 13: speculative decoding (SPEC, MODEL_DRAFT, SPEC_N_MAX, SPEC_SAMPLING)."""

from dataclasses import replace
from itertools import product

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import capabilities as cap
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.speculative import (
    Blocker,
    SpecSource,
    ngram_blocker,
    ngram_bounds,
    spec_args,
    spec_auto_blocker,
    spec_source,
    stateful_sampler,
)
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE

BOUNDS = ["--spec-ngram-mod-n-match", "24", "--spec-ngram-mod-n-min", "48", "--spec-ngram-mod-n-max", "64"]
NGRAM_ARGS = ["--spec-type", "ngram-mod", *BOUNDS]
GREEDY = ["--spec-draft-sampling", "greedy"]
MTP_ARGS = ["--spec-type", "draft-mtp"]

# Engine help variants, each missing one capability of the new engine.
HELP_NO_SIMPLE = NEW_ENGINE.replace("|draft-simple", "")
HELP_NO_PROBABILISTIC = NEW_ENGINE.replace(",probabilistic", "")
HELP_NO_SAMPLING_FLAG = NEW_ENGINE.replace("--spec-draft-sampling {greedy,probabilistic}\n", "")
HELP_NO_NGRAM_FLAGS = NEW_ENGINE.replace("--spec-ngram-mod-n-match N\n", "")
# An engine that knows draft models but not the current n-max flag (so no MTP either).
HELP_SIMPLE_ONLY = "--spec-type [none|draft-simple]\n--spec-draft-sampling {greedy,probabilistic}\n"

MTP_MODEL = GGUFInfo(arch="qwen3", block_count=40, nextn=1, has_nextn_tensor=True)
PLAIN_MODEL = GGUFInfo(arch="llama", block_count=40)
MTP_DRAFT_PATH = "/models/mtp-qwen3.gguf"
SMALL_DRAFT_PATH = "/models/drafts/small-0.6b.gguf"
MTP_HEAD_GGUF = GGUFInfo(arch="qwen3", block_count=1, nextn=1, has_nextn_tensor=True)
SMALL_GGUF = GGUFInfo(arch="qwen3", block_count=28)

# A host where SPEC=auto is allowed: new official build, MTP model, fit in charge, numeric context.
BASE = HostFacts(help=NEW_ENGINE, gguf=MTP_MODEL, engine_build=11009)
WITH_MTP_DRAFT = replace(BASE, gguf=PLAIN_MODEL, draft=MTP_DRAFT_PATH, draft_gguf=MTP_HEAD_GGUF)
WITH_SMALL_DRAFT = replace(BASE, gguf=PLAIN_MODEL, draft=SMALL_DRAFT_PATH, draft_gguf=SMALL_GGUF)
DRAFT_IS_MODEL = replace(BASE, draft="/models/qwen3.gguf", draft_gguf=MTP_MODEL, draft_is_model=True)


def ids(notes):
    return [n.id for n in notes]


def run(preset, facts=BASE, extra=()):
    return spec_args(preset, list(extra), facts)


# --- 13.1 / 13.2: spellings, off, unreadable, user-set ------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected_args", "expected_ids", "auto"),
    [
        ("", [], [], False),
        ("off", [], [], False),
        ("OFF", [], [], False),
        (" Non ", [], [], False),
        ("no", [], [], False),
        ("0", [], [], False),
        ("auto", [*MTP_ARGS, *GREEDY], ["spec.auto"], True),
        (" AUTO ", [*MTP_ARGS, *GREEDY], ["spec.auto"], True),
        ("mtp", [*MTP_ARGS, *GREEDY], ["spec.forced"], False),
        ("Mtp", [*MTP_ARGS, *GREEDY], ["spec.forced"], False),
        ("ngram", NGRAM_ARGS, ["spec.ngram", "spec.ngram_head_unused"], False),
        ("mtp+ngram", ["--spec-type", "draft-mtp,ngram-mod", *BOUNDS, *GREEDY], ["spec.forced"], False),
        ("ngram+mtp", ["--spec-type", "draft-mtp,ngram-mod", *BOUNDS, *GREEDY], ["spec.forced"], False),
        ("garbage", [], ["spec.invalid"], False),
        ("1", [], ["spec.invalid"], False),
        ("mtp ngram", [], ["spec.invalid"], False),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_spec_spellings(spec, expected_args, expected_ids, auto):
    args, notes, is_auto = run({"SPEC": spec})
    assert args == expected_args
    assert ids(notes) == expected_ids
    assert is_auto is auto


def test_ngram_plus_mtp_is_named_mtp_plus_ngram_in_notes():
    notes = run({"SPEC": "ngram+mtp"})[1]
    assert notes[0].text.startswith("SPEC=mtp+ngram → MTP head forced")


@pytest.mark.parametrize("raw", ["garbage", " Garbage ", "yes"], ids=repr)
def test_unreadable_spec_quotes_the_raw_value(raw):
    args, notes, is_auto = run({"SPEC": raw, "MODEL_DRAFT": "x.gguf"})
    assert (args, is_auto) == ([], False)
    assert len(notes) == 1
    assert notes[0].text == (f"SPEC={raw} unreadable (off, auto, mtp, ngram or mtp+ngram): no speculative decoding")


@pytest.mark.parametrize(
    ("draft", "expected_ids"),
    [("mtp.gguf", ["spec.draft_ignored_off"]), ("  ", []), ("", [])],
    ids=["draft-set", "draft-blank", "draft-empty"],
)
def test_off_with_model_draft(draft, expected_ids):
    args, notes, is_auto = run({"SPEC": "off", "MODEL_DRAFT": draft}, WITH_MTP_DRAFT)
    assert args == []
    assert ids(notes) == expected_ids
    assert not is_auto
    if notes:
        assert notes[0].text == "MODEL_DRAFT ignored: SPEC=off (auto or mtp to use it)"


@pytest.mark.parametrize(
    ("extra", "arg_env"),
    [
        (["--spec-type", "ngram-mod"], {}),
        (["--spec-type=draft-mtp"], {}),
        (["--spec_type", "x"], {}),
        (["-md", "/m/d.gguf"], {}),
        (["--model-draft", "/m/d.gguf"], {}),
        (["--spec-draft-model", "/m/d.gguf"], {}),
        (["-hfd", "org/repo"], {}),
        (["-hfrd", "org/repo"], {}),
        (["--spec-draft-hf", "org/repo"], {}),
        (["--hf-repo-draft", "org/repo"], {}),
        (["--spec-default"], {}),
        (["--spec-ngram-mod-n-max=32"], {}),
        (["--spec_ngram_simple_size_n", "4"], {}),
        ([], {"LLAMA_ARG_SPEC_TYPE": "draft-mtp"}),
        ([], {"LLAMA_ARG_SPEC_DRAFT_MODEL": "/m/d.gguf"}),
        ([], {"LLAMA_ARG_SPEC_DRAFT_HF_REPO": "org/repo"}),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else ",".join(v),
)
@pytest.mark.parametrize("spec", ["auto", "mtp", "ngram", "mtp+ngram"])
def test_user_set_speculation_wins(spec, extra, arg_env):
    args, notes, is_auto = run({"SPEC": spec, "SPEC_N_MAX": "8"}, replace(BASE, arg_env=arg_env), extra)
    assert args == []
    assert ids(notes) == ["spec.user_set"]
    assert notes[0].text == "speculative decoding already set in EXTRA_ARGS or LLAMA_ARG_*: SPEC ignored"
    assert not is_auto


def test_user_set_is_checked_before_the_ngram_guards():
    notes = run({"SPEC": "ngram"}, replace(BASE, help=OLD_ENGINE), ["-md", "d.gguf"])[1]
    assert ids(notes) == ["spec.user_set"]


@pytest.mark.parametrize(
    "arg_env",
    [{"LLAMA_ARG_SPEC_DRAFT_N_MAX": "8"}, {"LLAMA_ARG_SPEC_DRAFT_SAMPLING": "greedy"}, {"LLAMA_ARG_SPEC_TYPE": ""}],
    ids=["n-max-env", "sampling-env", "empty-type-env"],
)
def test_tuning_env_alone_is_not_user_set(arg_env):
    notes = run({"SPEC": "mtp"}, replace(BASE, arg_env=arg_env))[1]
    assert ids(notes) == ["spec.forced"]


# --- 13.3 specSource ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "key", "facts", "expected"),
    [
        (
            "mtp",
            "mtp.gguf",
            replace(BASE, draft=""),
            SpecSource(blocker=Blocker("draft_not_found", "MODEL_DRAFT=mtp.gguf not found")),
        ),
        (
            "auto",
            "mtp.gguf",
            replace(BASE, draft="", draft_err="stat /models/mtp.gguf: no such file or directory"),
            SpecSource(
                blocker=Blocker(
                    "draft_not_found",
                    "MODEL_DRAFT=mtp.gguf not found (stat /models/mtp.gguf: no such file or directory)",
                )
            ),
        ),
        (
            "mtp",
            "mtp.gguf",
            replace(BASE, draft=MTP_DRAFT_PATH, draft_gguf=None),
            SpecSource(
                blocker=Blocker("draft_unreadable", "MODEL_DRAFT unreadable (incomplete GGUF or still downloading?)")
            ),
        ),
        (
            "mtp",
            "mtp.gguf",
            WITH_MTP_DRAFT,
            SpecSource(args=("-md", MTP_DRAFT_PATH, "--spec-type", "draft-mtp"), is_mtp=True),
        ),
        (
            "mtp+ngram",
            "mtp.gguf",
            WITH_MTP_DRAFT,
            SpecSource(args=("-md", MTP_DRAFT_PATH, "--spec-type", "draft-mtp"), is_mtp=True),
        ),
        (
            "mtp",
            "mtp.gguf",
            replace(WITH_MTP_DRAFT, help=OLD_ENGINE),
            SpecSource(blocker=Blocker("mtp_unsupported", "this engine does not know draft-mtp")),
        ),
        (
            "mtp",
            "mtp.gguf",
            replace(WITH_MTP_DRAFT, help=HELP_SIMPLE_ONLY),
            SpecSource(blocker=Blocker("mtp_unsupported", "this engine does not know draft-mtp")),
        ),
        (
            "mtp",
            "eagle.gguf",
            replace(WITH_SMALL_DRAFT, draft_gguf=GGUFInfo(arch="eagle3")),
            SpecSource(
                blocker=Blocker(
                    "draft_sidecar",
                    "MODEL_DRAFT is a eagle3 head, not a draft model: set -md and --spec-type in EXTRA_ARGS",
                )
            ),
        ),
        (
            "auto",
            "dflash.gguf",
            replace(WITH_SMALL_DRAFT, draft_gguf=GGUFInfo(arch=" DFlash ")),
            SpecSource(
                blocker=Blocker(
                    "draft_sidecar",
                    "MODEL_DRAFT is a  DFlash  head, not a draft model: set -md and --spec-type in EXTRA_ARGS",
                )
            ),
        ),
        ("mtp+ngram", "small.gguf", WITH_SMALL_DRAFT, SpecSource()),
        (
            "mtp",
            "small.gguf",
            WITH_SMALL_DRAFT,
            SpecSource(args=("-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple")),
        ),
        (
            "auto",
            "small.gguf",
            replace(WITH_SMALL_DRAFT, help=HELP_SIMPLE_ONLY),
            SpecSource(args=("-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple")),
        ),
        (
            "mtp",
            "small.gguf",
            replace(WITH_SMALL_DRAFT, help=HELP_NO_SIMPLE),
            SpecSource(
                blocker=Blocker("draft_simple_unsupported", "this engine does not know --spec-type draft-simple")
            ),
        ),
        (
            "mtp",
            "small.gguf",
            replace(WITH_SMALL_DRAFT, help=OLD_ENGINE),
            SpecSource(
                blocker=Blocker("draft_simple_unsupported", "this engine does not know --spec-type draft-simple")
            ),
        ),
        (
            "auto",
            "",
            replace(BASE, gguf=None),
            SpecSource(blocker=Blocker("model_unreadable", "model metadata unreadable")),
        ),
        ("auto", "", replace(BASE, gguf=PLAIN_MODEL), SpecSource(quiet=True)),
        (
            "auto",
            "",
            replace(BASE, gguf=GGUFInfo(arch="qwen3", nextn=1)),
            SpecSource(
                blocker=Blocker(
                    "no_mtp_head", "no MTP head in this file (published separately? MODEL_DRAFT=mtp-….gguf)"
                )
            ),
        ),
        (
            "mtp",
            "",
            replace(BASE, gguf=PLAIN_MODEL),
            SpecSource(
                blocker=Blocker(
                    "no_mtp_head", "no MTP head in this file (published separately? MODEL_DRAFT=mtp-….gguf)"
                )
            ),
        ),
        (
            "auto",
            "",
            replace(BASE, help=OLD_ENGINE),
            SpecSource(blocker=Blocker("mtp_unsupported", "this engine does not know draft-mtp")),
        ),
        ("auto", "", BASE, SpecSource(args=("--spec-type", "draft-mtp"), is_mtp=True)),
    ],
    ids=[
        "draft-unresolved",
        "draft-unresolved-with-error",
        "draft-gguf-unreadable",
        "draft-mtp-head",
        "draft-mtp-head-mtp+ngram",
        "draft-mtp-head-old-engine",
        "draft-mtp-head-engine-without-n-max",
        "draft-eagle3",
        "draft-dflash-raw-arch",
        "small-draft-mtp+ngram",
        "small-draft-simple",
        "small-draft-simple-only-engine",
        "small-draft-no-simple-capability",
        "small-draft-old-engine",
        "model-gguf-unreadable",
        "auto-no-head-quiet",
        "auto-nextn-key-without-tensor",
        "forced-no-head",
        "head-old-engine",
        "built-in-head",
    ],
)
def test_spec_source(mode, key, facts, expected):
    assert spec_source(mode, key, facts) == expected


def test_draft_wins_over_the_models_own_head():
    # MODEL_DRAFT set and resolved: the main model's head is not looked at.
    facts = replace(WITH_SMALL_DRAFT, gguf=MTP_MODEL)
    assert spec_source("mtp", "small.gguf", facts).args == ("-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple")


@pytest.mark.parametrize(
    ("spec", "draft", "facts", "code", "why"),
    [
        ("mtp", " mtp.gguf ", replace(BASE, draft=""), "draft_not_found", "MODEL_DRAFT=mtp.gguf not found"),
        ("auto", "", replace(BASE, help=OLD_ENGINE), "mtp_unsupported", "this engine does not know draft-mtp"),
        (
            "mtp",
            "",
            replace(BASE, gguf=PLAIN_MODEL),
            "no_mtp_head",
            "no MTP head in this file (published separately? MODEL_DRAFT=mtp-….gguf)",
        ),
    ],
    ids=["draft-missing", "old-engine", "no-head"],
)
def test_source_skip_note(spec, draft, facts, code, why):
    preset = {"SPEC": spec, "MODEL_DRAFT": draft, "SPEC_N_MAX": "8", "SPEC_SAMPLING": "probabilistic"}
    args, notes, is_auto = run(preset, facts)
    assert args == []
    assert not is_auto
    assert [(n.id, n.code) for n in notes] == [("spec.skip", code)]
    assert notes[0].text == f"SPEC={spec}: {why} — no speculative decoding"


def test_auto_on_a_model_without_head_is_silent():
    preset = {"SPEC": "auto", "SPEC_N_MAX": "abc", "SPEC_SAMPLING": "bogus"}
    assert run(preset, replace(BASE, gguf=PLAIN_MODEL)) == ([], [], False)


def test_quiet_source_comes_before_the_auto_guards():
    # Nothing would happen anyway: no note about the unknown build either.
    assert run({"SPEC": "auto"}, replace(BASE, gguf=PLAIN_MODEL, engine_build=0)) == ([], [], False)


# --- 13.2 steps 10-12: argv forms and mode notes -----------------------------------------------


@pytest.mark.parametrize(
    ("preset", "facts", "expected_args", "text"),
    [
        (
            {"SPEC": "auto"},
            BASE,
            [*MTP_ARGS, *GREEDY],
            "SPEC=auto → MTP head: output unchanged (every token is verified by the model), ~1-2 GB more VRAM. "
            "Measure prefill; SPEC=off to turn it off.",
        ),
        (
            {"SPEC": "auto", "MODEL_DRAFT": "small.gguf"},
            WITH_SMALL_DRAFT,
            ["-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple", *GREEDY],
            "SPEC=auto → draft small-0.6b.gguf: output unchanged (every token is verified by the model), "
            "~1-2 GB more VRAM. Measure prefill; SPEC=off to turn it off.",
        ),
        (
            {"SPEC": "auto", "MODEL_DRAFT": "mtp.gguf"},
            WITH_MTP_DRAFT,
            ["-md", MTP_DRAFT_PATH, *MTP_ARGS, *GREEDY],
            "SPEC=auto → MTP head: output unchanged (every token is verified by the model), ~1-2 GB more VRAM. "
            "Measure prefill; SPEC=off to turn it off.",
        ),
        (
            {"SPEC": "mtp"},
            BASE,
            [*MTP_ARGS, *GREEDY],
            "SPEC=mtp → MTP head forced: output unchanged, ~1-2 GB more VRAM",
        ),
        (
            {"SPEC": "mtp", "MODEL_DRAFT": "small.gguf"},
            WITH_SMALL_DRAFT,
            ["-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple", *GREEDY],
            "SPEC=mtp → draft small-0.6b.gguf forced: output unchanged, ~1-2 GB more VRAM",
        ),
        (
            {"SPEC": "mtp+ngram"},
            BASE,
            ["--spec-type", "draft-mtp,ngram-mod", *BOUNDS, *GREEDY],
            "SPEC=mtp+ngram → MTP head forced: output unchanged, ~1-2 GB more VRAM; "
            "n-grams too (ngram-mod, they take priority when they find a repetition)",
        ),
        (
            {"SPEC": "mtp+ngram", "MODEL_DRAFT": "mtp.gguf"},
            WITH_MTP_DRAFT,
            ["-md", MTP_DRAFT_PATH, "--spec-type", "draft-mtp,ngram-mod", *BOUNDS, *GREEDY],
            "SPEC=mtp+ngram → MTP head forced: output unchanged, ~1-2 GB more VRAM; "
            "n-grams too (ngram-mod, they take priority when they find a repetition)",
        ),
    ],
    ids=[
        "auto-head",
        "auto-small-draft",
        "auto-mtp-draft",
        "mtp-head",
        "mtp-small-draft",
        "mtp+ngram",
        "mtp+ngram-draft",
    ],
)
def test_mode_note_and_argv(preset, facts, expected_args, text):
    args, notes, is_auto = run(preset, facts)
    assert args == expected_args
    assert [n.text for n in notes] == [text]
    assert is_auto is (preset["SPEC"] == "auto")


@pytest.mark.parametrize(
    ("preset", "facts", "extra", "suffix"),
    [
        (
            {"NGL": "20"},
            BASE,
            [],
            "; manual placement (GPU layers fixed at 20): --fit does not count the draft, "
            "place it with -devd / -ngld if VRAM runs short",
        ),
        (
            {},
            BASE,
            ["-dev", "CUDA0"],
            "; manual placement (--device): --fit does not count the draft, "
            "place it with -devd / -ngld if VRAM runs short",
        ),
        (
            {},
            BASE,
            ["--device=CUDA1"],
            "; manual placement (--device): --fit does not count the draft, "
            "place it with -devd / -ngld if VRAM runs short",
        ),
        (
            {},
            BASE,
            ["--fit", "off", "-dev", "CUDA0"],
            "; manual placement (--fit off): --fit does not count the draft, "
            "place it with -devd / -ngld if VRAM runs short",
        ),
        ({"CTX": "0"}, BASE, [], "; context not a number: fit could shrink it to make room for the draft"),
        ({}, BASE, ["-c", "auto"], "; context not a number: fit could shrink it to make room for the draft"),
        ({}, replace(BASE, gguf=replace(MTP_MODEL, arch="Qwen4Exp")), [], "; qwen4exp MTP very recent"),
        # The environment's device list is not mentioned by the forced note (EXTRA only).
        ({}, replace(BASE, arg_env={"LLAMA_ARG_DEVICE": "CUDA0"}), [], ""),
    ],
    ids=[
        "ngl-fixed",
        "device-extra",
        "device-extra-eq",
        "fit-off-before-device",
        "ctx-0",
        "ctx-text",
        "qwen4exp",
        "device-env",
    ],
)
def test_forced_note_suffixes(preset, facts, extra, suffix):
    args, notes = run({"SPEC": "mtp", **preset}, facts, extra)[:2]
    assert args == [*MTP_ARGS, *GREEDY]
    assert ids(notes) == ["spec.forced"]
    assert notes[0].text == "SPEC=mtp → MTP head forced: output unchanged, ~1-2 GB more VRAM" + suffix


def test_forced_note_suffixes_accumulate_in_order():
    facts = replace(BASE, gguf=replace(MTP_MODEL, arch="qwen4exp"))
    notes = run({"SPEC": "mtp+ngram", "CTX": "0", "NGL": "all"}, facts)[1]
    assert notes[0].text == (
        "SPEC=mtp+ngram → MTP head forced: output unchanged, ~1-2 GB more VRAM"
        "; n-grams too (ngram-mod, they take priority when they find a repetition)"
        "; manual placement (GPU layers fixed at all): --fit does not count the draft, "
        "place it with -devd / -ngld if VRAM runs short"
        "; context not a number: fit could shrink it to make room for the draft"
        "; qwen4exp MTP very recent"
    )
    assert ids(notes) == ["spec.forced", "spec.cost_ngl"]


# --- 13.2 step 8: mtp+ngram falls back to n-grams -----------------------------------------------

NGRAM_TEXT = (
    "SPEC=ngram → n-grams from the context (ngram-mod, drafts of 48 to 64 tokens): "
    "distribution unchanged (every token verified), ~16 MB of RAM; mostly useful for code, measure it"
)


@pytest.mark.parametrize(
    ("preset", "facts", "code", "why"),
    [
        (
            {"MODEL_DRAFT": "small.gguf"},
            WITH_SMALL_DRAFT,
            "draft_not_mtp",
            "MODEL_DRAFT is not an MTP head",
        ),
        (
            {},
            replace(BASE, gguf=PLAIN_MODEL),
            "no_mtp_head",
            "no MTP head in this file (published separately? MODEL_DRAFT=mtp-….gguf)",
        ),
        ({"MODEL_DRAFT": "gone.gguf"}, replace(BASE, draft=""), "draft_not_found", "MODEL_DRAFT=gone.gguf not found"),
        (
            {},
            replace(BASE, help=NEW_ENGINE.replace("draft-mtp", "draft-mt_")),
            "mtp_unsupported",
            "this engine does not know draft-mtp",
        ),
        ({}, replace(BASE, gguf=None), "model_unreadable", "model metadata unreadable"),
    ],
    ids=["small-draft", "no-head", "draft-missing", "no-mtp-capability", "model-unreadable"],
)
def test_mtp_plus_ngram_falls_back_to_ngrams(preset, facts, code, why):
    args, notes, is_auto = run({"SPEC": "mtp+ngram", **preset}, facts)
    assert args == NGRAM_ARGS
    assert not is_auto
    assert [(n.id, n.code) for n in notes] == [("spec.ngram_fallback", code)]
    assert notes[0].text == f"SPEC=mtp+ngram: without MTP ({why}) → n-grams only. " + NGRAM_TEXT


def test_fallback_never_adds_draft_flags_and_reports_ignored_keys():
    preset = {"SPEC": "mtp+ngram", "MODEL_DRAFT": "small.gguf", "SPEC_N_MAX": "8", "SPEC_SAMPLING": "probabilistic"}
    args, notes = run(preset, WITH_SMALL_DRAFT)[:2]
    assert args == NGRAM_ARGS
    # No draft-ignored / head-unused notes in the fallback: the lead already says why.
    assert ids(notes) == ["spec.ngram_fallback", "spec.ngram_params_ignored"]
    assert notes[1].text == "SPEC_N_MAX and SPEC_SAMPLING ignored: n-grams have no draft to tune"


def test_fallback_keeps_the_cost_notes():
    facts = replace(BASE, gguf=replace(PLAIN_MODEL, hybrid=True))
    notes = run({"SPEC": "mtp+ngram", "NGL": "all"}, facts)[1]
    assert ids(notes) == ["spec.ngram_fallback", "spec.cost_hybrid", "spec.cost_ngl"]


def test_mtp_plus_ngram_guards_apply_before_the_source():
    # An n-gram guard blocks the whole mode, even with a perfectly good MTP head.
    args, notes = run({"SPEC": "mtp+ngram"}, replace(BASE, help=HELP_NO_NGRAM_FLAGS))[:2]
    assert args == []
    assert [(n.id, n.code) for n in notes] == [("spec.skip", "ngram_unsupported")]
    assert notes[0].text == (
        "SPEC=mtp+ngram: this engine does not know --spec-ngram-mod-n-match — no speculative decoding"
    )


# --- 13.4 specAutoBlocker -------------------------------------------------------------------------

QWEN4 = replace(MTP_MODEL, arch="QWEN4EXP")


@pytest.mark.parametrize(
    ("preset", "facts", "extra", "expected"),
    [
        ({}, BASE, [], None),
        (
            {},
            replace(BASE, gguf=QWEN4),
            [],
            Blocker("qwen4exp", "qwen4exp: MTP too recent for this engine, SPEC=mtp to force it"),
        ),
        (
            {"NGL": "20"},
            BASE,
            [],
            Blocker(
                "manual_placement", "manual placement (GPU layers fixed at 20) — --fit does not count the draft's VRAM"
            ),
        ),
        (
            {},
            BASE,
            ["-ts", "1,1"],
            Blocker("manual_placement", "manual placement (--tensor-split) — --fit does not count the draft's VRAM"),
        ),
        (
            {},
            replace(BASE, help=OLD_ENGINE),
            [],
            Blocker(
                "manual_placement", "manual placement (GPU layers fixed at 999) — --fit does not count the draft's VRAM"
            ),
        ),
        (
            {},
            BASE,
            ["-dev", "CUDA0"],
            Blocker("device", "manual placement (--device) — --fit does not count the draft's VRAM"),
        ),
        (
            {},
            BASE,
            ["--device=CUDA0,CUDA1"],
            Blocker("device", "manual placement (--device) — --fit does not count the draft's VRAM"),
        ),
        (
            {},
            replace(BASE, arg_env={"LLAMA_ARG_DEVICE": "CUDA1"}),
            [],
            Blocker("device", "manual placement (--device) — --fit does not count the draft's VRAM"),
        ),
        (
            {"CTX": "0"},
            BASE,
            [],
            Blocker("ctx_not_fixed", "context not a number — fit could shrink it to make room for the draft"),
        ),
        (
            {"CTX": "big"},
            BASE,
            [],
            Blocker("ctx_not_fixed", "context not a number — fit could shrink it to make room for the draft"),
        ),
        (
            {"CTX": "8192"},
            BASE,
            ["-c", "-1"],
            Blocker("ctx_not_fixed", "context not a number — fit could shrink it to make room for the draft"),
        ),
        ({"CTX": "0"}, BASE, ["--ctx-size", "65536"], None),
        ({}, replace(BASE, mmproj="/models/mmproj.gguf"), [], Blocker("mmproj", "vision projector loaded")),
        ({}, BASE, ["--mmproj", "/m/p.gguf"], Blocker("mmproj", "vision projector loaded")),
        ({}, BASE, ["-mm", "/m/p.gguf"], Blocker("mmproj", "vision projector loaded")),
        ({}, replace(BASE, engine_build=0), [], Blocker("build_unknown", "engine build unknown (self-built or fork)")),
        ({}, replace(BASE, engine_build=11008), [], Blocker("build_old", "engine b11008, b11009 at least")),
        ({}, replace(BASE, engine_build=11009), [], None),
        ({}, replace(BASE, engine_build=12000), [], None),
        (
            {},
            replace(BASE, spec_auto_blocked="the last launch with this configuration never answered"),
            [],
            Blocker("auto_blocked", "the last launch with this configuration never answered"),
        ),
    ],
    ids=[
        "clear",
        "qwen4exp",
        "fit-blocker-ngl",
        "fit-blocker-tensor-split",
        "fit-blocker-old-engine-999",
        "device-extra",
        "device-extra-eq",
        "device-env",
        "ctx-0",
        "ctx-text",
        "ctx-extra-negative",
        "ctx-extra-wins",
        "mmproj-facts",
        "mmproj-extra",
        "mm-extra",
        "build-0",
        "build-11008",
        "build-11009",
        "build-newer",
        "previous-attempt",
    ],
)
def test_spec_auto_blocker(preset, facts, extra, expected):
    assert spec_auto_blocker(preset, extra, facts) == expected


@pytest.mark.parametrize(
    ("preset", "facts", "extra", "code"),
    [
        ({"NGL": "20"}, replace(BASE, gguf=QWEN4), [], "qwen4exp"),
        ({"NGL": "20"}, BASE, ["-dev", "CUDA0"], "manual_placement"),
        ({"CTX": "0"}, BASE, ["-dev", "CUDA0"], "device"),
        ({"CTX": "0"}, replace(BASE, mmproj="/m/p.gguf"), [], "ctx_not_fixed"),
        ({}, replace(BASE, mmproj="/m/p.gguf", engine_build=0), [], "mmproj"),
        ({}, replace(BASE, engine_build=11008, spec_auto_blocked="never answered"), [], "build_old"),
    ],
    ids=["qwen4exp>fit", "fit>device", "device>ctx", "ctx>mmproj", "mmproj>build", "build>attempt"],
)
def test_spec_auto_blocker_first_match_wins(preset, facts, extra, code):
    blocker = spec_auto_blocker(preset, extra, facts)
    assert blocker is not None
    assert blocker.code == code


def test_auto_guard_skip_note():
    args, notes, is_auto = run({"SPEC": "auto", "SPEC_SAMPLING": "probabilistic"}, replace(BASE, engine_build=11008))
    assert (args, is_auto) == ([], False)
    assert [(n.id, n.code, n.text) for n in notes] == [
        ("spec.skip", "build_old", "SPEC=auto: engine b11008, b11009 at least — no speculative decoding")
    ]


def test_auto_guards_do_not_apply_to_forced_modes():
    facts = replace(BASE, engine_build=0, mmproj="/m/p.gguf", spec_auto_blocked="never answered")
    args, notes, is_auto = run({"SPEC": "mtp"}, facts)
    assert args == [*MTP_ARGS, *GREEDY]
    assert ids(notes) == ["spec.forced"]
    assert not is_auto


# --- 13.5 n-grams ---------------------------------------------------------------------------------


def test_ngram_bounds_are_explicit():
    assert ngram_bounds() == BOUNDS


OFFLOAD_WHY = (
    "experts on CPU: a verification batch of 65 tokens reaches GGML_OP_OFFLOAD_MIN_BATCH ({}) and would copy "
    "these weights to the GPU on every draft — OP_OFFLOAD_MIN_BATCH=128 to try it, measure"
)


@pytest.mark.parametrize(
    ("mode", "preset", "facts", "extra", "expected"),
    [
        ("ngram", {}, BASE, [], None),
        ("mtp+ngram", {}, BASE, [], None),
        (
            "ngram",
            {},
            replace(BASE, help=OLD_ENGINE),
            [],
            Blocker("ngram_unsupported", "this engine does not know --spec-ngram-mod-n-match"),
        ),
        (
            "mtp+ngram",
            {},
            replace(BASE, help=HELP_NO_NGRAM_FLAGS),
            [],
            Blocker("ngram_unsupported", "this engine does not know --spec-ngram-mod-n-match"),
        ),
        (
            "ngram",
            {},
            replace(BASE, help=OLD_ENGINE),
            ["--spec-draft-n-max", "8", "--cpu-moe"],
            Blocker("ngram_unsupported", "this engine does not know --spec-ngram-mod-n-match"),
        ),
        (
            "ngram",
            {},
            BASE,
            ["--spec-draft-n-max=8"],
            Blocker("draft_flags_extra", "--spec-draft-n-max in EXTRA_ARGS (draft tuned by hand)"),
        ),
        (
            "ngram",
            {},
            BASE,
            ["--spec_draft_p_min", "0.5", "--cpu-moe"],
            Blocker("draft_flags_extra", "--spec_draft_p_min in EXTRA_ARGS (draft tuned by hand)"),
        ),
        ("mtp+ngram", {}, BASE, ["--spec-draft-n-max", "8"], None),
        ("ngram", {}, BASE, ["--cpu-moe"], Blocker("offload_threshold", OFFLOAD_WHY.format(32))),
        ("mtp+ngram", {}, BASE, ["-cmoe"], Blocker("offload_threshold", OFFLOAD_WHY.format(32))),
        ("ngram", {"OP_OFFLOAD_MIN_BATCH": "128"}, BASE, ["--cpu-moe"], None),
        ("ngram", {"OP_OFFLOAD_MIN_BATCH": "66"}, BASE, ["--cpu-moe"], None),
        (
            "ngram",
            {"OP_OFFLOAD_MIN_BATCH": "65"},
            BASE,
            ["--cpu-moe"],
            Blocker("offload_threshold", OFFLOAD_WHY.format(65)),
        ),
        (
            "ngram",
            {"OP_OFFLOAD_MIN_BATCH": " 64 "},
            BASE,
            ["--cpu-moe"],
            Blocker("offload_threshold", OFFLOAD_WHY.format(64)),
        ),
        (
            "ngram",
            {"OP_OFFLOAD_MIN_BATCH": "abc"},
            BASE,
            ["--cpu-moe"],
            Blocker("offload_threshold", OFFLOAD_WHY.format(32)),
        ),
        (
            "ngram",
            {"OP_OFFLOAD_MIN_BATCH": "2000000"},
            BASE,
            ["--cpu-moe"],
            Blocker("offload_threshold", OFFLOAD_WHY.format(32)),
        ),
        ("ngram", {}, replace(BASE, user_env={"GGML_OP_OFFLOAD_MIN_BATCH": "128"}), ["--cpu-moe"], None),
        (
            "ngram",
            {},
            replace(BASE, user_env={"GGML_OP_OFFLOAD_MIN_BATCH": "48"}),
            ["--cpu-moe"],
            Blocker("offload_threshold", OFFLOAD_WHY.format(48)),
        ),
        (
            # The environment's variable wins over the preset key, even when unusable.
            "ngram",
            {"OP_OFFLOAD_MIN_BATCH": "128"},
            replace(BASE, user_env={"GGML_OP_OFFLOAD_MIN_BATCH": "abc"}),
            ["--cpu-moe"],
            Blocker("offload_threshold", OFFLOAD_WHY.format(32)),
        ),
        (
            "ngram",
            {"OP_OFFLOAD_MIN_BATCH": "16"},
            replace(BASE, user_env={"GGML_OP_OFFLOAD_MIN_BATCH": "200"}),
            ["--cpu-moe"],
            None,
        ),
        (
            "ngram",
            {"NGL": "30"},
            BASE,
            [],
            Blocker("offload_threshold", OFFLOAD_WHY.replace("experts on CPU", "GPU layers limited to 30").format(32)),
        ),
        ("ngram", {"NGL": "41"}, BASE, [], None),
        (
            # Unknown block count: any layer count short of the sentinel leaves layers in RAM.
            "ngram",
            {"NGL": "41"},
            replace(BASE, gguf=None),
            [],
            Blocker("offload_threshold", OFFLOAD_WHY.replace("experts on CPU", "GPU layers limited to 41").format(32)),
        ),
        (
            "ngram",
            {},
            BASE,
            ["-nkvo"],
            Blocker("offload_threshold", OFFLOAD_WHY.replace("experts on CPU", "KV cache on CPU").format(32)),
        ),
    ],
    ids=[
        "ngram-clear",
        "mtp+ngram-clear",
        "old-engine",
        "no-n-match-flag",
        "capability-first",
        "draft-flag-eq",
        "draft-flag-underscore",
        "draft-flag-mtp+ngram-ok",
        "cpu-moe-default-32",
        "cmoe-mtp+ngram",
        "preset-128",
        "preset-66",
        "preset-65",
        "preset-64-trimmed",
        "preset-text",
        "preset-too-big",
        "env-128",
        "env-48",
        "env-text-beats-preset",
        "env-beats-preset",
        "ngl-30-of-40",
        "ngl-41-of-40",
        "ngl-unknown-blocks",
        "kv-on-cpu",
    ],
)
def test_ngram_blocker(mode, preset, facts, extra, expected):
    assert ngram_blocker(preset, extra, facts, mode) == expected


@pytest.mark.parametrize(
    ("preset", "facts", "expected_ids"),
    [
        ({}, BASE, ["spec.ngram", "spec.ngram_head_unused"]),
        ({}, replace(BASE, gguf=PLAIN_MODEL), ["spec.ngram"]),
        ({}, replace(BASE, gguf=None), ["spec.ngram"]),
        ({"MODEL_DRAFT": "mtp.gguf"}, BASE, ["spec.ngram", "spec.ngram_draft_ignored"]),
        # The draft need not even resolve: it is not used.
        (
            {"MODEL_DRAFT": "gone.gguf"},
            replace(BASE, draft="", gguf=PLAIN_MODEL),
            ["spec.ngram", "spec.ngram_draft_ignored"],
        ),
        ({"SPEC_N_MAX": "8"}, replace(BASE, gguf=PLAIN_MODEL), ["spec.ngram", "spec.ngram_params_ignored"]),
        ({"SPEC_SAMPLING": " greedy "}, replace(BASE, gguf=PLAIN_MODEL), ["spec.ngram", "spec.ngram_params_ignored"]),
        ({"SPEC_N_MAX": "  ", "SPEC_SAMPLING": ""}, replace(BASE, gguf=PLAIN_MODEL), ["spec.ngram"]),
        (
            {"MODEL_DRAFT": "mtp.gguf", "SPEC_N_MAX": "99", "SPEC_SAMPLING": "probabilistic"},
            BASE,
            ["spec.ngram", "spec.ngram_draft_ignored", "spec.ngram_params_ignored"],
        ),
    ],
    ids=[
        "head-unused",
        "no-head",
        "no-metadata",
        "draft-ignored",
        "draft-unresolved-ignored",
        "n-max-ignored",
        "sampling-ignored",
        "blank-keys",
        "all-notes",
    ],
)
def test_plain_ngram(preset, facts, expected_ids):
    args, notes, is_auto = run({"SPEC": "ngram", **preset}, facts)
    assert args == NGRAM_ARGS
    assert ids(notes) == expected_ids
    assert notes[0].text == NGRAM_TEXT
    assert not is_auto


def test_plain_ngram_note_texts():
    notes = run({"SPEC": "ngram", "MODEL_DRAFT": "d.gguf"})[1]
    assert notes[1].text == "MODEL_DRAFT ignored with SPEC=ngram: SPEC=mtp+ngram for both"
    notes = run({"SPEC": "ngram"})[1]
    assert notes[1].text == "the model's MTP head is unused with SPEC=ngram: SPEC=mtp+ngram for both"


@pytest.mark.parametrize(
    ("preset", "facts", "extra", "code"),
    [
        ({}, replace(BASE, help=OLD_ENGINE), [], "ngram_unsupported"),
        ({}, BASE, ["--spec-draft-p-min", "0.5"], "draft_flags_extra"),
        ({}, BASE, ["--cpu-moe"], "offload_threshold"),
    ],
    ids=["old-engine", "draft-flag", "offload"],
)
def test_ngram_guard_skip_note(preset, facts, extra, code):
    args, notes, is_auto = run({"SPEC": "ngram", **preset}, facts, extra)
    assert (args, is_auto) == ([], False)
    assert [(n.id, n.code) for n in notes] == [("spec.skip", code)]
    assert notes[0].text.startswith("SPEC=ngram: ")
    assert notes[0].text.endswith(" — no speculative decoding")


def test_ngram_does_not_need_an_official_build_or_metadata():
    facts = replace(BASE, engine_build=0, gguf=None, mmproj="/m/p.gguf")
    args = run({"SPEC": "ngram", "CTX": "0"}, facts, ["-dev", "CUDA0"])[0]
    assert args == NGRAM_ARGS


# --- cost notes ---------------------------------------------------------------------------------

GIB = 1 << 30


@pytest.mark.parametrize(
    ("preset", "facts", "extra", "expected_ids"),
    [
        ({}, replace(BASE, gguf=replace(PLAIN_MODEL, hybrid=True)), [], ["spec.cost_hybrid"]),
        (
            {"OP_OFFLOAD_MIN_BATCH": "128"},
            replace(BASE, gguf=PLAIN_MODEL, model_bytes=70 * GIB, ram_mib=64 * 1024),
            ["--cpu-moe"],
            ["spec.cost_ram"],
        ),
        (
            {"OP_OFFLOAD_MIN_BATCH": "128"},
            replace(BASE, gguf=PLAIN_MODEL, model_bytes=64 * GIB, ram_mib=64 * 1024),
            ["--cpu-moe"],
            [],
        ),
        (
            {"OP_OFFLOAD_MIN_BATCH": "128"},
            replace(BASE, gguf=PLAIN_MODEL, model_bytes=70 * GIB, ram_mib=0),
            ["--cpu-moe"],
            [],
        ),
        ({}, replace(BASE, gguf=PLAIN_MODEL, model_bytes=70 * GIB, ram_mib=64 * 1024), [], []),
        ({"NGL": "all"}, replace(BASE, gguf=PLAIN_MODEL), [], ["spec.cost_ngl"]),
        ({}, replace(BASE, gguf=PLAIN_MODEL), ["-ngl", "99"], ["spec.cost_ngl"]),
        ({"NGL": "999"}, replace(BASE, gguf=PLAIN_MODEL), [], []),
        ({"NGL": "auto"}, replace(BASE, gguf=PLAIN_MODEL), [], []),
        (
            {"NGL": "all", "OP_OFFLOAD_MIN_BATCH": "128"},
            replace(BASE, gguf=replace(PLAIN_MODEL, hybrid=True), model_bytes=70 * GIB, ram_mib=64 * 1024),
            ["--cpu-moe"],
            ["spec.cost_hybrid", "spec.cost_ram", "spec.cost_ngl"],
        ),
    ],
    ids=[
        "hybrid",
        "bigger-than-ram",
        "equal-to-ram",
        "ram-unknown",
        "weights-on-gpu",
        "ngl-all",
        "ngl-extra",
        "ngl-sentinel",
        "ngl-auto",
        "all-three-in-order",
    ],
)
def test_ngram_cost_notes(preset, facts, extra, expected_ids):
    notes = run({"SPEC": "ngram", **preset}, facts, extra)[1]
    assert ids(notes) == ["spec.ngram", *expected_ids]


def test_cost_note_texts():
    facts = replace(BASE, gguf=replace(PLAIN_MODEL, hybrid=True), model_bytes=70 * GIB, ram_mib=64 * 1024)
    notes = run({"SPEC": "ngram", "NGL": "all", "OP_OFFLOAD_MIN_BATCH": "128"}, facts, ["--cpu-moe"])[1]
    assert [n.text for n in notes[1:]] == [
        "hybrid model: each n-gram draft copies the recurrent state (a checkpoint in host RAM) and reloads "
        "it when rejected — compare the time per turn, not only the throughput",
        "model larger than RAM, weights on CPU: a verification batch reads most experts of every layer — "
        "watch disk reads, not only tokens/s",
        "NGL forced (--fit inactive): the logits of 65 positions per slot take a few tens of MiB of extra VRAM",
    ]


def test_mtp_plus_ngram_cost_notes_follow_the_forced_note():
    facts = replace(BASE, gguf=replace(MTP_MODEL, hybrid=True))
    args, notes = run({"SPEC": "mtp+ngram", "SPEC_N_MAX": "4"}, facts)[:2]
    assert ids(notes) == ["spec.forced", "spec.cost_hybrid"]
    assert args == ["--spec-type", "draft-mtp,ngram-mod", *BOUNDS, "--spec-draft-n-max", "4", *GREEDY]


def test_mtp_alone_has_no_cost_notes():
    facts = replace(BASE, gguf=replace(MTP_MODEL, hybrid=True))
    notes = run({"SPEC": "mtp", "NGL": "all"}, facts)[1]
    assert ids(notes) == ["spec.forced"]


# --- 13.6 SPEC_N_MAX ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected_flags", "expected_ids"),
    [
        ("", [], []),
        ("   ", [], []),
        ("1", ["--spec-draft-n-max", "1"], []),
        ("64", ["--spec-draft-n-max", "64"], []),
        (" 8 ", ["--spec-draft-n-max", "8"], []),
        ("+8", ["--spec-draft-n-max", "8"], []),
        ("0", [], ["spec.nmax_invalid"]),
        ("65", [], ["spec.nmax_invalid"]),
        ("-3", [], ["spec.nmax_invalid"]),
        ("abc", [], ["spec.nmax_invalid"]),
        ("8.5", [], ["spec.nmax_invalid"]),
    ],
    ids=repr,
)
def test_spec_n_max(value, expected_flags, expected_ids):
    args, notes = run({"SPEC": "mtp", "SPEC_N_MAX": value})[:2]
    assert args == [*MTP_ARGS, *expected_flags, *GREEDY]
    assert ids(notes) == ["spec.forced", *expected_ids]
    if expected_ids:
        assert notes[1].text == f"SPEC_N_MAX={value.strip()} unreadable (1 to 64 tokens): engine default"


@pytest.mark.parametrize(
    ("facts", "extra", "expected_flags", "expected_ids"),
    [
        (
            replace(WITH_SMALL_DRAFT, help=HELP_SIMPLE_ONLY),
            [],
            ["-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple", *GREEDY],
            ["spec.forced", "spec.nmax_unsupported"],
        ),
        (
            WITH_SMALL_DRAFT,
            ["--spec-draft-n-max", "4"],
            ["-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple", *GREEDY],
            ["spec.forced"],
        ),
        (
            WITH_SMALL_DRAFT,
            ["--spec-draft-n-max=4"],
            ["-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple", *GREEDY],
            ["spec.forced"],
        ),
        (
            replace(WITH_SMALL_DRAFT, arg_env={"LLAMA_ARG_SPEC_DRAFT_N_MAX": "4"}),
            [],
            ["-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple", *GREEDY],
            ["spec.forced"],
        ),
        (
            WITH_SMALL_DRAFT,
            [],
            ["-md", SMALL_DRAFT_PATH, "--spec-type", "draft-simple", "--spec-draft-n-max", "16", *GREEDY],
            ["spec.forced"],
        ),
    ],
    ids=["engine-without-flag", "extra", "extra-eq", "env", "written"],
)
def test_spec_n_max_precedence(facts, extra, expected_flags, expected_ids):
    args, notes = run({"SPEC": "mtp", "MODEL_DRAFT": "small.gguf", "SPEC_N_MAX": "16"}, facts, extra)[:2]
    assert args == expected_flags
    assert ids(notes) == expected_ids
    if "spec.nmax_unsupported" in expected_ids:
        assert notes[1].text == "this engine does not know --spec-draft-n-max: SPEC_N_MAX ignored"


def test_invalid_n_max_is_reported_even_when_the_user_set_it():
    notes = run({"SPEC": "mtp", "SPEC_N_MAX": "100"}, BASE, ["--spec-draft-n-max", "4"])[1]
    assert ids(notes) == ["spec.forced", "spec.nmax_invalid"]


def test_n_max_applies_to_auto():
    args, notes, is_auto = run({"SPEC": "auto", "SPEC_N_MAX": "6"})
    assert args == [*MTP_ARGS, "--spec-draft-n-max", "6", *GREEDY]
    assert ids(notes) == ["spec.auto"]
    assert is_auto


# --- 13.7 SPEC_SAMPLING -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "value", "extra", "sampling", "expected_ids"),
    [
        ("mtp", "", [], "greedy", []),
        ("mtp", "greedy", [], "greedy", []),
        ("mtp", " GREEDY ", [], "greedy", []),
        ("mtp", "probabilistic", [], "probabilistic", []),
        ("mtp", " Probabilistic ", [], "probabilistic", []),
        ("mtp+ngram", "probabilistic", [], "probabilistic", []),
        ("auto", "probabilistic", [], "greedy", ["spec.sampling_auto"]),
        ("auto", "probabilistic", ["--mirostat", "2"], "greedy", ["spec.sampling_auto"]),
        ("mtp", "probabilistic", ["--mirostat", "2"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "probabilistic", ["--mirostat=1"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "probabilistic", ["--mirostat", "0"], "probabilistic", []),
        ("mtp", "probabilistic", ["--mirostat", "2", "--mirostat", "0"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "probabilistic", ["--samplers", "top_k;adaptive-p"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "probabilistic", ["--samplers=adaptive_p"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "probabilistic", ["--samplers", "ADAPTIVE-P"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "probabilistic", ["--samplers", "top_k;min_p"], "probabilistic", []),
        ("mtp", "probabilistic", ["--sampling-seq", "kta"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "probabilistic", ["--sampler-seq", "a"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "probabilistic", ["--sampling-seq", "ktp"], "probabilistic", []),
        ("mtp+ngram", "probabilistic", ["--samplers", "adaptive-p"], "greedy", ["spec.sampling_stateful"]),
        ("mtp", "random", [], "greedy", ["spec.sampling_invalid"]),
        ("auto", "Typical", [], "greedy", ["spec.sampling_invalid"]),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else repr(v),
)
def test_spec_sampling(spec, value, extra, sampling, expected_ids):
    args, notes = run({"SPEC": spec, "SPEC_SAMPLING": value}, BASE, extra)[:2]
    assert args[-2:] == ["--spec-draft-sampling", sampling]
    assert args.count("--spec-draft-sampling") == 1
    assert ids(notes)[1:] == expected_ids


@pytest.mark.parametrize(
    ("extra", "sampler"),
    [
        (["--mirostat", "2"], "--mirostat 2"),
        (["--mirostat", " 1 "], "--mirostat 1"),
        (["--mirostat", "0"], ""),
        (["--mirostat", ""], ""),
        (["--samplers", "penalties;adaptive-p"], "--samplers adaptive-p"),
        (["--samplers", "adaptive_p"], "--samplers adaptive-p"),
        (["--sampling-seq", "a"], "--sampling-seq with adaptive-p"),
        (["--sampling-seq", "A"], ""),
        (["--top-k", "40"], ""),
        ([], ""),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else repr(v),
)
def test_stateful_sampler(extra, sampler):
    assert stateful_sampler(extra) == sampler


def test_sampling_note_texts():
    notes = run({"SPEC": "auto", "SPEC_SAMPLING": "probabilistic"})[1]
    assert notes[1].text == "SPEC_SAMPLING=probabilistic ignored with SPEC=auto (SPEC=mtp to choose it): greedy"
    notes = run({"SPEC": "mtp", "SPEC_SAMPLING": "probabilistic"}, BASE, ["--mirostat", "2"])[1]
    assert notes[1].text == (
        "SPEC_SAMPLING=probabilistic refused with --mirostat 2 (this sampler would advance on rejected tokens): greedy"
    )
    notes = run({"SPEC": "mtp", "SPEC_SAMPLING": " Random "})[1]
    assert notes[1].text == "SPEC_SAMPLING=random unreadable (greedy or probabilistic): greedy"
    notes = run({"SPEC": "mtp", "SPEC_SAMPLING": "probabilistic"}, replace(BASE, help=HELP_NO_PROBABILISTIC))[1]
    assert (notes[1].id, notes[1].text) == (
        "spec.sampling_unsupported",
        "this engine does not know --spec-draft-sampling probabilistic: greedy",
    )


@pytest.mark.parametrize(
    ("facts", "extra", "value", "flag", "expected_ids"),
    [
        (BASE, ["--spec-draft-sampling", "greedy"], "probabilistic", False, []),
        (BASE, ["--spec-draft-sampling=probabilistic"], "", False, []),
        (replace(BASE, arg_env={"LLAMA_ARG_SPEC_DRAFT_SAMPLING": "greedy"}), [], "probabilistic", False, []),
        (replace(BASE, help=HELP_NO_SAMPLING_FLAG), [], "", False, []),
        # This help lost the line that named probabilistic as well.
        (replace(BASE, help=HELP_NO_SAMPLING_FLAG), [], "probabilistic", False, ["spec.sampling_unsupported"]),
        (replace(BASE, help=HELP_NO_SAMPLING_FLAG), [], "bogus", False, ["spec.sampling_invalid"]),
        (replace(BASE, help=HELP_NO_PROBABILISTIC), [], "probabilistic", True, ["spec.sampling_unsupported"]),
    ],
    ids=["extra", "extra-eq", "env", "no-flag-greedy", "no-flag-probabilistic", "no-flag-invalid", "no-probabilistic"],
)
def test_sampling_flag_only_when_engine_knows_it_and_user_is_silent(facts, extra, value, flag, expected_ids):
    args, notes = run({"SPEC": "mtp", "SPEC_SAMPLING": value}, facts, extra)[:2]
    assert ("--spec-draft-sampling" in args) is flag
    assert args[:2] == MTP_ARGS
    assert ids(notes)[1:] == expected_ids


def test_n_max_notes_come_before_sampling_notes():
    notes = run({"SPEC": "mtp", "SPEC_N_MAX": "0", "SPEC_SAMPLING": "nope"})[1]
    assert ids(notes) == ["spec.forced", "spec.nmax_invalid", "spec.sampling_invalid"]


# --- 13.9 MODEL_DRAFT = the model itself --------------------------------------------------------

DRAFT_IS_MODEL_TEXT = (
    "MODEL_DRAFT=qwen3.gguf is the main model itself: read as no MODEL_DRAFT (its own MTP head, no -md)"
)


@pytest.mark.parametrize(
    ("spec", "facts", "expected_args", "expected_ids"),
    [
        ("mtp", DRAFT_IS_MODEL, [*MTP_ARGS, *GREEDY], ["spec.draft_is_model", "spec.forced"]),
        ("auto", DRAFT_IS_MODEL, [*MTP_ARGS, *GREEDY], ["spec.draft_is_model", "spec.auto"]),
        (
            "mtp+ngram",
            DRAFT_IS_MODEL,
            ["--spec-type", "draft-mtp,ngram-mod", *BOUNDS, *GREEDY],
            ["spec.draft_is_model", "spec.forced"],
        ),
        (
            "mtp+ngram",
            replace(DRAFT_IS_MODEL, gguf=PLAIN_MODEL, draft_gguf=PLAIN_MODEL),
            NGRAM_ARGS,
            ["spec.draft_is_model", "spec.ngram_fallback"],
        ),
        # Like an empty MODEL_DRAFT: the model's head is what goes unused, not a draft.
        ("ngram", DRAFT_IS_MODEL, NGRAM_ARGS, ["spec.draft_is_model", "spec.ngram", "spec.ngram_head_unused"]),
        # A skip replaces the mode note: one note, as for any other skip.
        ("auto", replace(DRAFT_IS_MODEL, engine_build=0), [], ["spec.skip"]),
        ("mtp", replace(DRAFT_IS_MODEL, help=OLD_ENGINE), [], ["spec.skip"]),
        # Auto on a model without a head stays quiet, as without MODEL_DRAFT.
        ("auto", replace(DRAFT_IS_MODEL, gguf=PLAIN_MODEL, draft_gguf=PLAIN_MODEL), [], []),
    ],
    ids=["mtp", "auto", "mtp+ngram", "mtp+ngram-fallback", "ngram", "auto-skip", "mtp-skip", "auto-quiet"],
)
def test_draft_is_model(spec, facts, expected_args, expected_ids):
    args, notes = run({"SPEC": spec, "MODEL_DRAFT": " qwen3.gguf "}, facts)[:2]
    assert args == expected_args
    assert "-md" not in args
    assert ids(notes) == expected_ids
    if expected_ids[:1] == ["spec.draft_is_model"]:
        assert notes[0].text == DRAFT_IS_MODEL_TEXT


def test_draft_is_model_fallback_reason_is_the_models():
    facts = replace(DRAFT_IS_MODEL, gguf=PLAIN_MODEL, draft_gguf=PLAIN_MODEL)
    notes = run({"SPEC": "mtp+ngram", "MODEL_DRAFT": "qwen3.gguf"}, facts)[1]
    assert notes[1].code == "no_mtp_head"


def test_draft_is_model_does_not_change_off():
    notes = run({"SPEC": "off", "MODEL_DRAFT": "qwen3.gguf"}, DRAFT_IS_MODEL)[1]
    assert ids(notes) == ["spec.draft_ignored_off"]


# --- engines: new vs old help, flags never emitted ----------------------------------------------


def test_fabricated_help_texts_carry_the_capabilities():
    for test in (
        cap.supports_mtp,
        cap.supports_draft_simple,
        cap.supports_spec_n_max,
        cap.supports_spec_sampling,
        cap.supports_probabilistic,
        cap.supports_ngram_mod,
    ):
        assert test(NEW_ENGINE)
        assert not test(OLD_ENGINE)
    assert not cap.supports_draft_simple(HELP_NO_SIMPLE)
    assert not cap.supports_probabilistic(HELP_NO_PROBABILISTIC)
    assert cap.supports_spec_sampling(HELP_NO_PROBABILISTIC)
    assert not cap.supports_spec_sampling(HELP_NO_SAMPLING_FLAG)
    assert not cap.supports_ngram_mod(HELP_NO_NGRAM_FLAGS)
    assert cap.supports_draft_simple(HELP_SIMPLE_ONLY)
    assert not cap.supports_spec_n_max(HELP_SIMPLE_ONLY)


@pytest.mark.parametrize(
    ("spec", "facts", "code"),
    [
        ("auto", BASE, "mtp_unsupported"),
        ("mtp", BASE, "mtp_unsupported"),
        ("ngram", BASE, "ngram_unsupported"),
        ("mtp+ngram", BASE, "ngram_unsupported"),
        ("mtp", WITH_SMALL_DRAFT, "draft_simple_unsupported"),
    ],
    ids=["auto", "mtp", "ngram", "mtp+ngram", "draft-simple"],
)
def test_old_engine_gets_no_speculative_flag(spec, facts, code):
    preset = {"SPEC": spec, "MODEL_DRAFT": "small.gguf" if facts.draft else ""}
    args, notes, is_auto = run(preset, replace(facts, help=OLD_ENGINE))
    assert (args, is_auto) == ([], False)
    assert [(n.id, n.code) for n in notes] == [("spec.skip", code)]


def test_unknown_engine_help_is_treated_as_old():
    args, notes = run({"SPEC": "mtp"}, replace(BASE, help=""))[:2]
    assert args == []
    assert notes[0].code == "mtp_unsupported"


NEVER = {"--spec-default", "--draft", "--draft-max", "--draft-n", "-ctkd", "-ctvd"}
SCENARIO_FACTS = [BASE, WITH_MTP_DRAFT, WITH_SMALL_DRAFT, DRAFT_IS_MODEL, replace(BASE, gguf=PLAIN_MODEL)]
SCENARIO_PRESETS = [
    {},
    {"SPEC_N_MAX": "8"},
    {"SPEC_SAMPLING": "probabilistic"},
    {"SPEC_N_MAX": "8", "SPEC_SAMPLING": "probabilistic", "MODEL_DRAFT": "d.gguf"},
]


@pytest.mark.parametrize(
    ("spec", "facts", "preset"),
    list(product(["auto", "mtp", "ngram", "mtp+ngram"], SCENARIO_FACTS, SCENARIO_PRESETS)),
)
def test_invariants(spec, facts, preset):
    extra = ["--jinja"]
    args, notes, is_auto = run({"SPEC": spec, **preset}, facts, extra)
    assert extra == ["--jinja"]  # EXTRA is never modified
    assert not NEVER & set(args)
    assert not any(a.startswith("--spec-synth") for a in args)
    assert "probabilistic" not in args or spec in ("mtp", "mtp+ngram")
    assert is_auto is (spec == "auto" and bool(args))
    if args[:2] == ["--spec-type", "ngram-mod"]:
        # n-grams only: no draft model, so no --spec-draft-* flag of any kind.
        assert args == NGRAM_ARGS
    assert args.count("--spec-type") <= 1
    assert all(n.id.startswith("spec.") for n in notes)
