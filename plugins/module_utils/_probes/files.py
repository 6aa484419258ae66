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


def write_cache_json(path: str, data: Mapping) -> None:
    """A probe cache file: atomic (temporary file + rename), mode 0600, in a 0700 directory; failures are
    ignored (a cache only saves time)."""
    directory = os.path.dirname(path)
    payload = json.dumps(data, sort_keys=True).encode()
    tmp = ""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)  # created 0600
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        tmp = ""
    except OSError:
        pass
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
