# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verified copies of an instance's files on the target: what a failed change goes back to."""

from __future__ import annotations

import os

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_bytes, write_atomically

__all__ = ["keep_copies", "read_bytes", "read_copies", "write_atomically"]


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
