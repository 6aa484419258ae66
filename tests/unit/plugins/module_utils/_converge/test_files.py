"""Atomic replacement of small files on the target."""

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.files import (
    keep_copies,
    read_bytes,
    read_copies,
    write_atomically,
)


def test_write_atomically_replaces_in_one_step(tmp_path):
    target = tmp_path / "d" / "f"
    write_atomically(str(target), b"one", 0o640)
    write_atomically(str(target), b"two", 0o600)
    assert target.read_bytes() == b"two"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["f"]


def test_read_bytes_of_a_missing_file_is_none(tmp_path):
    assert read_bytes(str(tmp_path / "nothing")) is None
    (tmp_path / "x").write_bytes(b"\x00a")
    assert read_bytes(str(tmp_path / "x")) == b"\x00a"


def test_copies_hold_exactly_the_last_files(tmp_path):
    copies = tmp_path / "last-good" / "main"
    assert read_copies(str(copies)) == {}
    keep_copies(str(copies), [("/etc/a.service", b"unit", 0o644), ("/etc/c/k", b"key", 0o600)])
    assert read_copies(str(copies)) == {"/etc/a.service": b"unit", "/etc/c/k": b"key"}
    assert (copies / "etc%c%k").stat().st_mode & 0o777 == 0o600
    keep_copies(str(copies), [("/etc/a.service", b"unit 2", 0o644)])
    assert read_copies(str(copies)) == {"/etc/a.service": b"unit 2"}
