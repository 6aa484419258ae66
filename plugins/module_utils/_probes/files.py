"""Reading files under a filesystem root, for the probes.

Every probe takes a ``root`` so tests can hand it a captured tree; this is
the one way they read under it: text or None, never an exception.
"""

from __future__ import annotations

import os


def read_root_file(root: str, relative: str) -> str | None:
    """Text of ``<root>/<relative>``; None when it cannot be read."""
    try:
        with open(os.path.join(root, relative), encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None
