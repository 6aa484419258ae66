# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Markers of verified model files: size, mtime and inode recorded when the checksum last matched.

``llama_server_models`` hashes a file only when these changed; the host judge (``llama_server_host``) reads the
same markers and hashes nothing: a file whose marker no longer matches is left to the models step. Read-only:
the models step writes a marker with ``_converge/models.py``.
"""

from __future__ import annotations

import hashlib
import json
import os

CHUNK = 8 << 20


def marker_path(marker_dir: str, path: str, checksum: str) -> str:
    """One marker per file name and checksum: a new checksum for the same name is a new file to verify."""
    digest = hashlib.sha1(checksum.encode(), usedforsecurity=False).hexdigest()[:16]
    return os.path.join(marker_dir, f"{os.path.basename(path)}.{digest}")


def identity(stat: os.stat_result) -> dict:
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino}


def read_marker(path: str) -> dict:
    """The marker's identity; {} for none, or an older marker (the checksum alone) that recorded no identity."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def file_digest(path: str, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def changed_what(marker: dict, now: dict) -> str:
    if not marker:
        return "it has no verified size and mtime yet"
    if marker.get("size") != now["size"]:
        return f"its size changed ({marker.get('size')} -> {now['size']} bytes)"
    if marker.get("mtime_ns") != now["mtime_ns"]:
        return "its modification time changed"
    return "it is another file (inode)"


def marker_matches(marker: dict, now: dict, checksum: str) -> bool:
    """The file is the one verified under this checksum: same size, mtime and inode."""
    return all(marker.get(key) == value for key, value in now.items()) and marker.get("checksum") == checksum


def unverified_why(marker_dir: str, path: str, checksum: str) -> str:
    """Why this file needs the models step (missing, or its marker no longer matches); "" when it is verified."""
    try:
        now = identity(os.stat(path))
    except FileNotFoundError:
        return "it is missing"
    except OSError as err:
        return f"it cannot be read: {err.strerror}"
    known = read_marker(marker_path(marker_dir, path, checksum))
    return "" if marker_matches(known, now, checksum) else changed_what(known, now)
