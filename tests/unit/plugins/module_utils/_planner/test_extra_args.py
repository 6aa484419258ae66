"""--flag=value in EXTRA_ARGS: written as two words for flags the engine lists (llama.cpp reads no = form)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.extra_args import split_equals_forms

HELP = "-c,    --ctx-size N\n-lm,   --load-mode MODE\n--spec-type TYPE\n-ot,   --override-tensor P\n"


@pytest.mark.parametrize(
    ("tokens", "expected", "named"),
    [
        pytest.param(["--ctx-size=512"], ["--ctx-size", "512"], "--ctx-size", id="long"),
        pytest.param(["-c=512"], ["-c", "512"], "-c", id="short"),
        pytest.param(["--load-mode=mmap+mlock"], ["--load-mode", "mmap+mlock"], "--load-mode", id="load-mode"),
        pytest.param(["-ot=exps=CPU"], ["-ot", "exps=CPU"], "-ot", id="first-equals-only"),
        pytest.param(["--spec_type=ngram-mod"], ["--spec_type", "ngram-mod"], "--spec_type", id="underscore-name"),
        pytest.param(["--ctx-size="], ["--ctx-size", ""], "--ctx-size", id="empty-value"),
        pytest.param(["--unknown=1"], ["--unknown=1"], "", id="not-in-help"),
        pytest.param(["-ot", "blk=CPU"], ["-ot", "blk=CPU"], "", id="value-not-a-flag"),
        pytest.param(["--ctx-size", "512"], ["--ctx-size", "512"], "", id="already-two-words"),
        pytest.param(["=--ctx-size"], ["=--ctx-size"], "", id="leading-equals"),
        pytest.param(["--ctx-sizeX=1"], ["--ctx-sizeX=1"], "", id="longer-name"),
    ],
)
def test_split_equals_forms(tokens, expected, named):
    out, note = split_equals_forms(tokens, HELP)
    assert out == expected
    if named:
        assert note is not None
        assert note.id == "extra.equals_split"
        assert named in note.text
    else:
        assert note is None


def test_unknown_engine_left_alone():
    assert split_equals_forms(["--ctx-size=512"], "") == (["--ctx-size=512"], None)


def test_note_names_each_flag_once():
    out, note = split_equals_forms(["-c=1", "-c=2", "--ctx-size=3"], HELP)
    assert out == ["-c", "1", "-c", "2", "--ctx-size", "3"]
    assert "-c, --ctx-size written as two words" in note.text
