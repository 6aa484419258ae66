# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading and atomically replacing small files on the target (units, credentials, markers, caches)."""

from __future__ import annotations

import os
import tempfile


def read_bytes(path: str) -> bytes | None:
    """The file's bytes; None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_atomically(path: str, content: bytes, mode: int, dir_mode: int = 0o755) -> None:
    """Write beside the target, fsync, then rename over it: a reader sees the old file or the new one.

    As root the file belongs to root (what the unit's credentials need); otherwise to whoever runs this.
    """
    directory = os.path.dirname(path)
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
