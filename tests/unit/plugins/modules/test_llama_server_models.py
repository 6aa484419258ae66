"""llama_server_models in-process on real files: markers, a truncated file, a rewritten one, check mode."""

import hashlib
import json
import os

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import models as converge_models
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import model_markers
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_models as models
from tests.unit.support.module_runner import run_module

CONTENT = b"GGUF" + bytes(range(256)) * 64


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(CONTENT)
    return path


def args(tmp_path, path, checksum=None, **more):
    checksum = checksum or "sha256:" + hashlib.sha256(CONTENT).hexdigest()
    return {"models": [{"path": str(path), "checksum": checksum, "url": "file:///m.gguf"}],
            "marker_dir": str(tmp_path / ".llamafleet"), **more}


def test_a_verified_file_is_not_read_again(tmp_path, model, capsys, monkeypatch):
    first = run_module(models.main, args(tmp_path, model), capsys)
    assert (first["changed"], first["fetch"], first["verified"]) == (True, [], [str(model)])
    (marker,) = (tmp_path / ".llamafleet").iterdir()
    assert json.loads(marker.read_text())["size"] == len(CONTENT)
    monkeypatch.setattr(converge_models, "file_digest", lambda *a: pytest.fail("an unchanged file was hashed"))
    again = run_module(models.main, args(tmp_path, model), capsys)
    assert (again["changed"], again["fetch"], again["verified"]) == (False, [], [])


def test_a_truncated_file_is_fetched_again(tmp_path, model, capsys):
    run_module(models.main, args(tmp_path, model), capsys)
    with open(model, "r+b") as handle:
        handle.truncate(100)
    result = run_module(models.main, args(tmp_path, model), capsys)
    assert result["fetch"] == [{"path": str(model), "url": "file:///m.gguf",
                                "why": f"its size changed ({len(CONTENT)} -> 100 bytes) and its checksum no longer "
                                       "matches"}]


def test_a_touched_but_intact_file_gets_a_new_marker(tmp_path, model, capsys):
    run_module(models.main, args(tmp_path, model), capsys)
    os.utime(model, ns=(1, 1))
    result = run_module(models.main, args(tmp_path, model), capsys)
    assert (result["changed"], result["fetch"], result["verified"]) == (True, [], [str(model)])


def test_missing_files_and_the_old_marker_form(tmp_path, model, capsys):
    missing = run_module(models.main, args(tmp_path, tmp_path / "none.gguf"), capsys)
    assert missing["fetch"][0]["why"] == "it is missing"
    old = tmp_path / ".llamafleet"
    old.mkdir()
    checksum = "sha256:" + hashlib.sha256(CONTENT).hexdigest()
    (old / os.path.basename(model_markers.marker_path(str(old), str(model), checksum))).write_text(checksum + "\n")
    upgraded = run_module(models.main, args(tmp_path, model), capsys)
    assert (upgraded["changed"], upgraded["verified"]) == (True, [str(model)])


def test_check_mode_writes_no_marker(tmp_path, model, capsys):
    result = run_module(models.main, args(tmp_path, model), capsys, check_mode=True)
    assert (result["changed"], result["fetch"]) == (False, [])
    assert not (tmp_path / ".llamafleet").exists()


def test_bad_checksums(tmp_path, model, capsys):
    assert "is not <algorithm>:<hex digest>" in run_module(models.main, args(tmp_path, model, "abc"), capsys)["msg"]
    marked = run_module(models.main, args(tmp_path, model, "sha256:" + "0" * 64, state="marked"), capsys)
    assert marked["failed"] is True
    assert marked["msg"].startswith("fetched model files do not match their checksum")
