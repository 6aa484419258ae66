"""The models step (_converge/models.py), table-driven on real files: which files are fetched, verified and marked,
and why the step fails (a malformed checksum stops it where it is; "marked" with files still to fetch)."""

import hashlib

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.models import check_models

CONTENT = b"GGUF" + bytes(range(256)) * 16
GOOD = "sha256:" + hashlib.sha256(CONTENT).hexdigest()
WRONG = "sha256:" + "0" * 64


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a.gguf").write_bytes(CONTENT)
    (tmp_path / "b.gguf").write_bytes(CONTENT)
    return tmp_path


def model(directory, name, checksum=GOOD):
    return {"path": str(directory / name), "checksum": checksum, "url": f"https://example.org/{name}"}


CASES = [
    # name, models (file, checksum), state, check mode -> changed, fetched (file, why), verified, failure, markers
    ("two good files are marked", [("a.gguf", GOOD), ("b.gguf", GOOD)], "checked", False,
     True, [], ["a.gguf", "b.gguf"], "", 2),
    ("check mode marks none", [("a.gguf", GOOD)], "checked", True, False, [], ["a.gguf"], "", 0),
    ("a missing file is fetched, unread", [("none.gguf", GOOD)], "checked", False,
     False, [("none.gguf", "it is missing")], [], "", 0),
    ("a wrong checksum is fetched again", [("a.gguf", WRONG)], "checked", False,
     False, [("a.gguf", "it has no verified size and mtime yet and its checksum no longer matches")], ["a.gguf"], "",
     0),
    ("after a download, a wrong file fails", [("b.gguf", GOOD), ("a.gguf", WRONG)], "marked", False,
     True, [("a.gguf", "it has no verified size and mtime yet and its checksum no longer matches")],
     ["b.gguf", "a.gguf"], "fetched model files do not match their checksum: {dir}/a.gguf: it has no verified size "
     "and mtime yet and its checksum no longer matches", 1),
    ("after a download, a missing file fails", [("none.gguf", GOOD)], "marked", False,
     False, [("none.gguf", "it is missing")], [], "fetched model files do not match their checksum: "
     "{dir}/none.gguf: it is missing", 0),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_check_models(files, case):
    _name, given, state, check_mode, changed, fetch, verified, failure, markers = case
    models = [model(files, name, checksum) for name, checksum in given]
    result, why = check_models(models, str(files / ".llamafleet"), state, check_mode)
    assert why == failure.format(dir=files)
    assert result == {
        "changed": changed,
        "fetch": [{"path": str(files / name), "url": f"https://example.org/{name}", "why": words}
                  for name, words in fetch],
        "verified": [str(files / name) for name in verified],
    }
    marker_dir = files / ".llamafleet"
    assert (len(list(marker_dir.iterdir())) if marker_dir.exists() else 0) == markers


@pytest.mark.parametrize("checksum", ["abc", "sha256:", "nosuchhash:00", ":00"])
def test_a_malformed_checksum_stops_the_step_with_no_result(files, checksum):
    # The files before it are checked (and marked); the module fails with the message alone, as it always did.
    result, why = check_models([model(files, "a.gguf"), model(files, "b.gguf", checksum)], str(files / "m"),
                               "checked", False)
    assert (result, why) == ({}, f"{files}/b.gguf: checksum {checksum!r} is not <algorithm>:<hex digest>")
    assert len(list((files / "m").iterdir())) == 1
