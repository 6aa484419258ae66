# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Marking a model file verified: the one write of the models step (``_probes/model_markers.py`` reads them)."""

from __future__ import annotations

import json

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import write_atomically


def write_marker(path: str, checksum: str, now: dict) -> None:
    """Record the file's identity (size, mtime, inode) under the checksum it was verified against."""
    write_atomically(path, (json.dumps({"checksum": checksum, **now}, sort_keys=True) + "\n").encode(), 0o644)
