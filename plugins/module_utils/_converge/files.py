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


def _copy_path(directory: str, path: str) -> str:
    return os.path.join(directory, path.strip("/").replace("/", "%"))


def keep_copies(directory: str, files) -> None:
    """Make ``directory`` hold exactly these files' contents (``(path, content, mode)``), one copy per path:
    the last verified deployment of an instance, which a failed change goes back to."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(directory), 0o700)
    wanted = set()
    for path, content, mode in files:
        copy = _copy_path(directory, path)
        wanted.add(copy)
        if read_bytes(copy) != content:
            write_atomically(copy, content, mode)
    for entry in os.listdir(directory):
        full = os.path.join(directory, entry)
        if full not in wanted:
            os.unlink(full)


def read_copies(directory: str) -> dict[str, bytes]:
    """{original path: content} of the copies keep_copies left; {} when there are none."""
    if not os.path.isdir(directory):
        return {}
    found = {"/" + entry.replace("%", "/"): read_bytes(os.path.join(directory, entry))
             for entry in os.listdir(directory)}
    return {path: content for path, content in found.items() if content is not None}
