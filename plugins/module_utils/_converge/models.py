# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The models step (``llama_server_models``): each model file checked against its marker, hashed only when the
marker no longer matches, and marked verified when its checksum matches; the one write of the step is the marker
(``_probes/model_markers.py`` reads them)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import write_atomically
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.model_markers import (
    changed_what,
    file_digest,
    identity,
    marker_matches,
    marker_path,
    read_marker,
)


def write_marker(path: str, checksum: str, now: dict) -> None:
    """Record the file's identity (size, mtime, inode) under the checksum it was verified against."""
    write_atomically(path, (json.dumps({"checksum": checksum, **now}, sort_keys=True) + "\n").encode(), 0o644)


def check_models(models: Sequence[Mapping], marker_dir: str, state: str, check_mode: bool) -> tuple[dict, str]:
    """(the module's result: changed, fetch, verified; why it fails or ""). Models are checked in order; a
    malformed checksum stops there with no result fields ({}), as the module always failed on one. With ``state``
    "marked" (after a download), a file still to fetch is a failure."""
    result: dict = {"changed": False, "fetch": [], "verified": []}
    for model in models:
        refused = _check_one(model, marker_dir, check_mode, result)
        if refused:
            return {}, refused
    if state == "marked" and result["fetch"]:
        return result, ("fetched model files do not match their checksum: "
                        + "; ".join(f"{item['path']}: {item['why']}" for item in result["fetch"]))
    return result, ""


def _check_one(model: Mapping, marker_dir: str, check_mode: bool, result: dict) -> str:
    """One model into ``result``; why its checksum is refused, or ""."""
    path, checksum = model["path"], model["checksum"]
    algorithm, _sep, expected = checksum.partition(":")
    if not expected or algorithm not in hashlib.algorithms_available:
        return f"{path}: checksum {checksum!r} is not <algorithm>:<hex digest>"
    marker = marker_path(marker_dir, path, checksum)
    try:
        now = identity(os.stat(path))
    except FileNotFoundError:
        result["fetch"].append({"path": path, "url": model["url"], "why": "it is missing"})
        return ""
    known = read_marker(marker)
    if marker_matches(known, now, checksum):
        return ""
    why = changed_what(known, now)
    result["verified"].append(path)
    if file_digest(path, algorithm) != expected.lower():
        result["fetch"].append({"path": path, "url": model["url"], "why": f"{why} and its checksum no longer matches"})
        return ""
    if not check_mode:
        write_marker(marker, checksum, now)
        result["changed"] = True
    return ""
