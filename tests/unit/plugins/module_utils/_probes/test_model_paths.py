"""Model path resolution (spec 16.1), MODEL / MMPROJ / MODEL_DRAFT (spec 1.1, 15), on temporary trees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.model_paths import (
    ModelPathError,
    model_search_dirs,
    resolve_draft,
    resolve_main_model,
    resolve_mmproj,
    resolve_model_path,
    same_file,
)


@pytest.mark.parametrize(
    ("home", "extras", "expected"),
    [
        ("/h", [], ["/h/models"]),
        ("/h/", [], ["/h/models"]),
        ("/h/./x/..", [], ["/h/models"]),
        ("/h", ["/a", "/b"], ["/h/models", "/a", "/b"]),
        # Normalised, de-duplicated, the models directory never repeated, blanks skipped.
        ("/h", ["/a/", "/a/../a", "/h/models", "/h/models/", "", "  ", "/b//c"], ["/h/models", "/a", "/b/c"]),
        # Relative extras resolve against home.
        ("/h", ["more", "./more", "models"], ["/h/models", "/h/more"]),
        ("/h", [" /a "], ["/h/models", "/a"]),
    ],
)
def test_model_search_dirs(home, extras, expected):
    assert model_search_dirs(home, extras) == expected


@pytest.fixture
def tree(tmp_path):
    """home/models, two extra directories and a directory outside all of them."""
    home = tmp_path / "home"
    models, extra1, extra2, outside = home / "models", tmp_path / "extra1", tmp_path / "extra2", tmp_path / "outside"
    for d in (models, extra1, extra2, outside):
        d.mkdir(parents=True)
    for f in (models / "a.gguf", extra1 / "b.gguf", extra2 / "b.gguf", extra2 / "only2.gguf", extra1 / "dir.gguf"):
        f.write_bytes(b"GGUF")
    (models / "dir.gguf").mkdir()  # a directory with a model's name is not a model
    (extra2 / "target.gguf").write_bytes(b"GGUF")
    (models / "link.gguf").symlink_to(extra2 / "target.gguf")
    (models / "dangling.gguf").symlink_to(tmp_path / "nowhere.gguf")
    (outside / "c.gguf").write_bytes(b"GGUF")
    (outside / "d.gguf").mkdir()
    (models / "Upper.GGUF").write_bytes(b"GGUF")
    (models / "with space.gguf").write_bytes(b"GGUF")
    return {
        "home": str(home),
        "dirs": [str(extra1), str(extra2)],
        "models": str(models),
        "extra1": str(extra1),
        "extra2": str(extra2),
        "outside": str(outside),
    }


def fill(template: str, tree: dict) -> str:
    return template.format(**tree)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a.gguf", "{models}/a.gguf"),
        ('"a.gguf"', "{models}/a.gguf"),
        ('  " a.gguf "  ', "{models}/a.gguf"),
        ("\ta.gguf\n", "{models}/a.gguf"),
        # Only the base name of a relative value counts, whatever the separator.
        ("sub/dir/a.gguf", "{models}/a.gguf"),
        ("models\\a.gguf", "{models}/a.gguf"),
        ("C:\\Users\\me\\loki\\models\\a.gguf", "{models}/a.gguf"),
        ('"D:\\llm\\b.gguf"', "{extra1}/b.gguf"),
        ("..\\..\\a.gguf", "{models}/a.gguf"),
        # First directory holding a regular file wins.
        ("b.gguf", "{extra1}/b.gguf"),
        ("only2.gguf", "{extra2}/only2.gguf"),
        ("dir.gguf", "{extra1}/dir.gguf"),
        ("link.gguf", "{models}/link.gguf"),  # a symlink to a file is a file
        # Nothing found: <home>/models/<base>, for the caller's "model not found".
        ("missing.gguf", "{models}/missing.gguf"),
        ("dangling.gguf", "{models}/dangling.gguf"),
        ("Upper.GGUF", "{models}/Upper.GGUF"),
        ("upper.gguf", "{models}/upper.gguf"),  # names are case-sensitive, the extension is not
        ("with space.gguf", "{models}/with space.gguf"),
        # Absolute inside a directory: accepted as is (normalised), even if absent.
        ("{models}/a.gguf", "{models}/a.gguf"),
        ("{models}/sub/../new.gguf", "{models}/new.gguf"),
        ("{extra2}/b.gguf", "{extra2}/b.gguf"),
        ("{extra1}/deeper/x.gguf", "{extra1}/deeper/x.gguf"),
        ('"{models}/a.gguf"', "{models}/a.gguf"),
        # Absolute outside every directory: accepted when it is an existing regular file.
        ("{outside}/c.gguf", "{outside}/c.gguf"),
        ("{outside}/../outside/c.gguf", "{outside}/c.gguf"),
    ],
)
def test_resolve_model_path(tree, value, expected):
    assert resolve_model_path(fill(value, tree), tree["home"], tree["dirs"]) == fill(expected, tree)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "invalid model name"),
        ("   ", "invalid model name"),
        ('""', "invalid model name"),
        ('" "', "invalid model name"),
        ("a.bin", "the model must be a .gguf file"),
        ("a.gguf.part", "the model must be a .gguf file"),
        ("a", "the model must be a .gguf file"),
        ("a.gguf/", "the model must be a .gguf file"),
        ("'a.gguf'", "the model must be a .gguf file"),  # only double quotes are trimmed
        ("{outside}/missing.gguf", "directory not allowed: {outside}"),
        ("{outside}/d.gguf", "directory not allowed: {outside}"),  # a directory, not a file
        # A sibling whose name starts with a search directory's name is not inside it.
        ("{models}2/x.gguf", "directory not allowed: {models}2"),
        ("/etc/x.gguf", "directory not allowed: /etc"),
    ],
)
def test_resolve_model_path_errors(tree, value, message):
    with pytest.raises(ModelPathError) as excinfo:
        resolve_model_path(fill(value, tree), tree["home"], tree["dirs"])
    assert str(excinfo.value) == fill(message, tree)


def test_model_path_error_is_a_value_error():
    assert issubclass(ModelPathError, ValueError)


# ---------------------------------------------------------------------------
# MODEL
# ---------------------------------------------------------------------------


def test_resolve_main_model_found(tree):
    assert resolve_main_model("a.gguf", tree["home"], tree["dirs"]) == fill("{models}/a.gguf", tree)
    assert resolve_main_model("{outside}/c.gguf".format(**tree), tree["home"], []) == fill("{outside}/c.gguf", tree)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "MODEL not defined"),
        ("  \t", "MODEL not defined"),
        ('""', "invalid model name"),
        ("model.bin", "the model must be a .gguf file"),
        ("missing.gguf", "model not found: {models}/missing.gguf"),
        ("dangling.gguf", "model not found: {models}/dangling.gguf"),
        ("{models}/absent.gguf", "model not found: {models}/absent.gguf"),
        ("{outside}/nope.gguf", "directory not allowed: {outside}"),
    ],
)
def test_resolve_main_model_errors(tree, value, message):
    with pytest.raises(ModelPathError) as excinfo:
        resolve_main_model(fill(value, tree), tree["home"], tree["dirs"])
    assert str(excinfo.value) == fill(message, tree)


def test_resolve_main_model_directory_named_like_a_model(tree):
    # Found nowhere as a file (models/dir.gguf is a directory): not found.
    with pytest.raises(ModelPathError, match=r"^model not found: .*/models/dir\.gguf$"):
        resolve_main_model("dir.gguf", tree["home"], [])


def make_shards(directory: Path, stem: str, present: list[int], total: int, width: int = 5) -> None:
    for index in present:
        (directory / f"{stem}-{index:0{width}d}-of-{total:0{width}d}.gguf").write_bytes(b"GGUF")


def test_resolve_main_model_complete_split_model(tree):
    make_shards(Path(tree["models"]), "Qwen3-235B-Q4_K_M", [1, 2, 3], 3)
    for name in ("Qwen3-235B-Q4_K_M-00001-of-00003.gguf", "Qwen3-235B-Q4_K_M-00003-of-00003.gguf"):
        assert resolve_main_model(name, tree["home"], []) == os.path.join(tree["models"], name)


@pytest.mark.parametrize(
    ("present", "total", "named", "missing"),
    [
        ([1, 3], 3, 1, "big-00002-of-00003.gguf"),
        ([2], 3, 2, "big-00001-of-00003.gguf, big-00003-of-00003.gguf"),
        ([1], 2, 1, "big-00002-of-00002.gguf"),
    ],
)
def test_resolve_main_model_incomplete_split_model(tree, present, total, named, missing):
    make_shards(Path(tree["extra1"]), "big", present, total)
    with pytest.raises(ModelPathError) as excinfo:
        resolve_main_model(f"big-{named:05d}-of-{total:05d}.gguf", tree["home"], tree["dirs"])
    assert str(excinfo.value) == (
        f"incomplete model: missing {missing} in {tree['extra1']} — this model has {total} files, download them all"
    )


def test_resolve_main_model_shard_replaced_by_a_directory(tree):
    make_shards(Path(tree["models"]), "m", [1], 2, width=2)
    (Path(tree["models"]) / "m-02-of-02.gguf").mkdir()
    with pytest.raises(ModelPathError, match=r"missing m-02-of-02\.gguf in .* this model has 2 files"):
        resolve_main_model("m-01-of-02.gguf", tree["home"], [])


def test_resolve_main_model_absolute_outside_split_model(tree):
    make_shards(Path(tree["outside"]), "far", [1], 2)
    with pytest.raises(ModelPathError, match=f"in {tree['outside']} — "):
        resolve_main_model(os.path.join(tree["outside"], "far-00001-of-00002.gguf"), tree["home"], [])


# ---------------------------------------------------------------------------
# MMPROJ and MODEL_DRAFT
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ""),
        ("  ", ""),
        ("a.gguf", "{models}/a.gguf"),
        ('"models\\b.gguf"', "{extra1}/b.gguf"),
        ("{outside}/c.gguf", "{outside}/c.gguf"),
    ],
)
def test_resolve_mmproj(tree, value, expected):
    assert resolve_mmproj(fill(value, tree), tree["home"], tree["dirs"]) == fill(expected, tree)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("mmproj.bin", "vision projector not found: mmproj.bin (the model must be a .gguf file)"),
        ('  ""  ', 'vision projector not found: "" (invalid model name)'),
        ("{outside}/x.gguf", "vision projector not found: {outside}/x.gguf (directory not allowed: {outside})"),
        ("missing.gguf", "vision projector not found: {models}/missing.gguf"),
        ("dir.gguf", "vision projector not found: {models}/dir.gguf"),
    ],
)
def test_resolve_mmproj_errors(tree, value, message):
    with pytest.raises(ModelPathError) as excinfo:
        resolve_mmproj(fill(value, tree), tree["home"], [])
    assert str(excinfo.value) == fill(message, tree)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ("", "")),
        (" ", ("", "")),
        ("only2.gguf", ("{extra2}/only2.gguf", "")),
        ("C:\\m\\b.gguf", ("{extra1}/b.gguf", "")),
        ("draft.bin", ("", "the model must be a .gguf file")),
        ('""', ("", "invalid model name")),
        ("{outside}/x.gguf", ("", "directory not allowed: {outside}")),
        ("missing.gguf", ("", "no such file: {models}/missing.gguf")),
        ("{models}/gone.gguf", ("", "no such file: {models}/gone.gguf")),
    ],
)
def test_resolve_draft(tree, value, expected):
    path, err = resolve_draft(fill(value, tree), tree["home"], tree["dirs"])
    assert (path, err) == (fill(expected[0], tree), fill(expected[1], tree))


def test_resolve_draft_never_raises_on_odd_input(tree):
    assert resolve_draft("\x00.gguf", tree["home"], [])[0] == ""


def test_same_file(tree, tmp_path):
    models = Path(tree["models"])
    a = models / "a.gguf"
    hard = tmp_path / "hard.gguf"
    os.link(a, hard)
    assert same_file(str(a), str(a))
    assert same_file(str(a), str(models / "sub" / ".." / "a.gguf")) is False  # "sub" does not exist
    assert same_file(str(a), str(models / "." / "a.gguf"))
    assert same_file(str(models / "link.gguf"), str(Path(tree["extra2"]) / "target.gguf"))
    assert same_file(str(a), str(hard))
    assert not same_file(str(a), str(Path(tree["extra1"]) / "b.gguf"))
    assert not same_file(str(a), str(models / "missing.gguf"))
    assert not same_file("", str(a))
    assert not same_file(str(a), "")
    assert not same_file("\x00", str(a))


def test_draft_is_model_through_resolution(tree):
    # MODEL and MODEL_DRAFT written differently but naming the same file.
    model = resolve_main_model("a.gguf", tree["home"], tree["dirs"])
    draft, err = resolve_draft(f'"{tree["models"]}/a.gguf"', tree["home"], tree["dirs"])
    assert err == ""
    assert same_file(model, draft)
