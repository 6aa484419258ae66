"""Reading files under a filesystem root, for the probes.

Every probe takes a ``root`` so tests can hand it a captured tree; this is
the one way they read under it: text or None, never an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping


def read_root_file(root: str, relative: str) -> str | None:
    """Text of ``<root>/<relative>``; None when it cannot be read."""
    try:
        with open(os.path.join(root, relative), encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None


def read_bytes(path: str) -> bytes | None:
    """The file's bytes; None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_atomically(path: str, content: bytes, mode: int, dir_mode: int = 0o755, make_dirs: bool = True) -> None:
    """Write beside the target, fsync, then rename over it: a reader sees the old file or the new one.

    The collection's one file writer: the converge steps' files, the probes' caches, the controller's summary. As
    root the file belongs to root (what the units' credentials need); otherwise to whoever runs this.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if make_dirs:
        os.makedirs(directory, mode=dir_mode, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".llamafleet-", dir=directory)
    try:
        os.fchmod(fd, mode)
        if os.geteuid() == 0:
            os.fchown(fd, 0, 0)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_cache_json(path: str, data: Mapping) -> None:
    """A probe cache file: mode 0600 in a 0700 directory. The only thing a probe writes; a failure is ignored (a
    cache only saves time)."""
    with contextlib.suppress(OSError):
        write_atomically(path, json.dumps(data, sort_keys=True).encode(), 0o600, dir_mode=0o700)
