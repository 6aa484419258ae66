"""Load-flag translation between engine generations (spec section 6)."""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.load_mode import normalize_load_flags
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note

DIO_NOTE = Note("load.dio_dropped", "this engine does not know --load-mode dio (DirectIO): default loading")


# --- 6.1: the engine knows --load-mode -------------------------------------

UPGRADE_CASES = [
    pytest.param([], [], id="empty"),
    pytest.param(["-c", "8192", "-fa", "on"], ["-c", "8192", "-fa", "on"], id="no-load-flags-unchanged"),
    pytest.param(["--mlock"], ["--load-mode", "mmap+mlock"], id="mlock-alone-keeps-mmap"),
    pytest.param(["--no-mmap"], ["--load-mode", "none"], id="no-mmap-alone"),
    pytest.param(["--mmap"], ["--load-mode", "mmap"], id="mmap-alone"),
    pytest.param(["--mlock", "--no-mmap"], ["--load-mode", "mlock"], id="mlock-and-no-mmap"),
    pytest.param(["--no-mmap", "--mlock"], ["--load-mode", "mlock"], id="no-mmap-and-mlock-any-order"),
    pytest.param(["--mlock", "--mmap"], ["--load-mode", "mmap+mlock"], id="mlock-and-mmap"),
    pytest.param(["--no-mmap", "--mmap"], ["--load-mode", "none"], id="no-mmap-and-mmap"),
    pytest.param(["--mmap", "--no-mmap"], ["--load-mode", "none"], id="mmap-and-no-mmap"),
    pytest.param(["--mlock", "--no-mmap", "--mmap"], ["--load-mode", "mlock"], id="all-three"),
    pytest.param(["--mlock", "--mlock"], ["--load-mode", "mmap+mlock"], id="repeated-old-flag-one-mode"),
    pytest.param(
        ["-c", "4096", "--mlock", "-fa", "on", "--no-mmap", "-np", "2"],
        ["-c", "4096", "-fa", "on", "-np", "2", "--load-mode", "mlock"],
        id="old-flags-removed-mode-appended-at-end",
    ),
    pytest.param(["--load-mode", "dio", "--mlock"], ["--load-mode", "dio"], id="explicit-long-wins"),
    pytest.param(["--no-mmap", "-lm", "mmap"], ["-lm", "mmap"], id="explicit-short-wins"),
    pytest.param(["--load-mode=none", "--mmap"], ["--load-mode=none"], id="explicit-long-equals-wins"),
    pytest.param(["-lm=mlock", "--mlock", "--no-mmap"], ["-lm=mlock"], id="explicit-short-equals-wins"),
    pytest.param(["--load-mode", "mmap"], ["--load-mode", "mmap"], id="explicit-alone-unchanged"),
    pytest.param(["-lm", "none", "-c", "1"], ["-lm", "none", "-c", "1"], id="explicit-short-alone-unchanged"),
    pytest.param(["--mlock=1"], ["--mlock=1"], id="old-flag-with-equals-is-not-exact-kept"),
    pytest.param(["--no-mmap-x", "--mmapx"], ["--no-mmap-x", "--mmapx"], id="lookalike-tokens-kept"),
]


@pytest.mark.parametrize(("extra", "expected"), UPGRADE_CASES)
def test_upgrade_to_load_mode(extra, expected):
    before = list(extra)
    out, note = normalize_load_flags(extra, True)
    assert out == expected
    # A deliberate difference from spec 6.1 (silent): a rewrite or a drop of the user's words is noted.
    rewritten = any(tok in ("--mlock", "--no-mmap", "--mmap") for tok in extra)
    assert (note is not None) is rewritten
    if note is not None:
        assert note.id == "load.rewritten"
        assert all(tok in note.text for tok in extra if tok in ("--mlock", "--no-mmap", "--mmap"))
        if expected[-2:-1] == ["--load-mode"] and "--load-mode" not in extra:
            assert note.text.endswith(f"→ --load-mode {expected[-1]} (this engine replaced the old switches)")
        else:
            assert "dropped" in note.text
    assert extra == before  # input untouched


def test_upgrade_keeps_dio_without_note():
    out, note = normalize_load_flags(["--load-mode", "dio"], True)
    assert out == ["--load-mode", "dio"]
    assert note is None


# --- 6.2: the engine does not know --load-mode -----------------------------

DOWNGRADE_CASES = [
    pytest.param([], [], None, id="empty"),
    pytest.param(["--mlock", "-c", "1"], ["--mlock", "-c", "1"], None, id="not-found-unchanged"),
    pytest.param(["--load-mode", "none"], ["--no-mmap"], None, id="none"),
    pytest.param(["-lm", "mlock"], ["--mlock", "--no-mmap"], None, id="mlock-short"),
    pytest.param(["--load-mode", "mlock"], ["--mlock", "--no-mmap"], None, id="mlock-long"),
    pytest.param(["--load-mode=mmap+mlock"], ["--mlock"], None, id="mmap-mlock-equals"),
    pytest.param(["-lm", "mmap+mlock"], ["--mlock"], None, id="mmap-mlock-short"),
    pytest.param(["--load-mode", "auto"], [], None, id="auto-nothing"),
    pytest.param(["--load-mode", "mmap"], [], None, id="mmap-nothing"),
    pytest.param(["--load-mode", "turbo"], [], None, id="unknown-nothing"),
    pytest.param(["--load-mode", "dio"], [], DIO_NOTE, id="dio-note"),
    pytest.param(["-lm", "dio"], [], DIO_NOTE, id="dio-short-note"),
    pytest.param(["--load-mode=DIO"], [], DIO_NOTE, id="dio-upper-lowercased"),
    pytest.param(
        ["-c", "1", "--load-mode", "dio", "-fa", "on"], ["-c", "1", "-fa", "on"], DIO_NOTE, id="dio-keeps-rest"
    ),
    pytest.param(["--mlock", "--load-mode", "dio"], ["--mlock"], DIO_NOTE, id="dio-keeps-old-flags"),
    pytest.param(["-lm", "None"], ["--no-mmap"], None, id="mode-lowercased"),
    pytest.param(["--load-mode=MLOCK"], ["--mlock", "--no-mmap"], None, id="equals-mode-lowercased"),
    pytest.param(["-lm=none"], ["-lm=none"], None, id="short-equals-not-recognised"),
    pytest.param(["-lm=dio"], ["-lm=dio"], None, id="short-equals-dio-not-recognised"),
    pytest.param(["-c", "1", "--load-mode"], ["-c", "1"], None, id="trailing-long-no-value"),
    pytest.param(["-lm"], [], None, id="trailing-short-no-value"),
    pytest.param(["--load-mode", "none", "-lm"], ["--no-mmap"], None, id="trailing-keeps-earlier-mode"),
    pytest.param(["--load-mode", "none", "--load-mode", "mmap+mlock"], ["--mlock"], None, id="last-mode-wins"),
    pytest.param(["--load-mode=dio", "-lm", "none"], ["--no-mmap"], None, id="last-mode-wins-over-dio"),
    pytest.param(["--load-mode", "--mlock"], [], None, id="value-token-consumed-whatever-it-is"),
    pytest.param(["--load-mode", ""], [], None, id="empty-value-nothing"),
    pytest.param(["--no-mmap", "--load-mode", "none"], ["--no-mmap"], None, id="no-mmap-not-duplicated"),
    pytest.param(["--mlock", "-lm", "mlock"], ["--mlock", "--no-mmap"], None, id="mlock-not-duplicated"),
    pytest.param(
        ["--no-mmap", "--load-mode", "mlock"], ["--no-mmap", "--mlock"], None, id="mlock-appends-missing-only"
    ),
    pytest.param(["--mlock", "--load-mode=mmap+mlock"], ["--mlock"], None, id="mmap-mlock-not-duplicated"),
    pytest.param(
        ["-c", "1", "--load-mode", "none", "-fa", "on"],
        ["-c", "1", "-fa", "on", "--no-mmap"],
        None,
        id="old-flag-appended-at-end",
    ),
    pytest.param(["--load-mode", "none", "--no-mmap"], ["--no-mmap"], None, id="present-after-not-duplicated"),
]


@pytest.mark.parametrize(("extra", "expected", "expected_note"), DOWNGRADE_CASES)
def test_downgrade_to_old_flags(extra, expected, expected_note):
    before = list(extra)
    out, note = normalize_load_flags(extra, False)
    assert out == expected
    assert note == expected_note
    assert extra == before  # input untouched


@pytest.mark.parametrize("supports", [True, False], ids=["upgrade", "downgrade"])
def test_result_is_a_new_list(supports):
    extra = ["-c", "1"]
    out = normalize_load_flags(extra, supports)[0]
    out.append("--changed")
    assert extra == ["-c", "1"]


def test_accepts_a_tuple():
    out, note = normalize_load_flags(("--mlock",), True)
    assert out == ["--load-mode", "mmap+mlock"]
    assert note == Note(
        "load.rewritten", "EXTRA_ARGS: --mlock → --load-mode mmap+mlock (this engine replaced the old switches)"
    )


# --- an engine without --load-mode and without a --mmap switch -------------


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param(["--mmap"], [], id="mmap-alone-dropped"),
        pytest.param(["-c", "1", "--mmap", "--mlock"], ["-c", "1", "--mlock"], id="mmap-dropped-mlock-kept"),
        pytest.param(["--load-mode", "none", "--mmap"], ["--no-mmap"], id="mmap-dropped-after-downgrade"),
        pytest.param(["--mmapx", "--mmap=1"], ["--mmapx", "--mmap=1"], id="lookalikes-kept"),
    ],
)
def test_mmap_dropped_where_the_engine_has_no_such_switch(extra, expected):
    # Deliberate difference from spec 6.2: llama.cpp of August 2025 has --no-mmap only and exits on
    # --mmap ("error: invalid argument: --mmap"); mmap is its default, so nothing is lost.
    before = list(extra)
    out, note = normalize_load_flags(extra, False, knows_mmap=False)
    assert out == expected
    assert note is None
    assert extra == before


def test_mmap_kept_where_the_engine_has_the_switch():
    assert normalize_load_flags(["--mmap"], False, knows_mmap=True) == (["--mmap"], None)
    # The upgrade direction ignores the switch question: --mmap becomes --load-mode mmap.
    out, note = normalize_load_flags(["--mmap"], True, knows_mmap=False)
    assert out == ["--load-mode", "mmap"]
    assert note is not None
    assert note.id == "load.rewritten"
