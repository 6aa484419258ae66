# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout lock file on a host: read, decided and rewritten under ``flock``, for ``llama_server_lock``.

The rules (who holds the host, whether this rollout may take it, the lease's bounds) are in
``_judgements/rollout_lock.py``; this file only opens, locks, reads and writes.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.rollout_lock import (
    decide,
    lease_refused,
)


class LeaseRefused(Exception):
    """The lease is out of its bounds; the lock file was not touched."""


def hold(params: Mapping, check_mode: bool, clock: Callable[[], float] = time.time) -> dict:
    """Acquire or release the lock as ``params`` (the module's options: state, path, lease_s, holder, take_over)
    ask; the module's result (changed, holder, and previous for a holder taken over). Raises LeaseRefused before
    the file is opened, and LockHeld (``_judgements/rollout_lock.py``) when another rollout holds the host."""
    refused = lease_refused(params["lease_s"])
    if refused:
        raise LeaseRefused(refused)
    path = params["path"]
    me = {str(k): v for k, v in params["holder"].items()}
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    # The file is opened, never replaced: flock on it serialises the read-decide-write of two rollouts.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(os.dup(fd), "r+", encoding="utf-8") as handle:
            text = handle.read()
            try:
                current = json.loads(text) if text.strip() else {}
            except ValueError:
                current = {}
            current = current if isinstance(current, dict) else {}
            decision = decide(current, me, state=params["state"], lease_s=params["lease_s"],
                              take_over=params["take_over"], now=int(clock()), path=path)
            if decision.write and not check_mode:
                handle.seek(0)
                handle.truncate()
                if decision.holder:
                    json.dump(decision.holder, handle, sort_keys=True)
                    handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
    finally:
        os.close(fd)
    result = {"changed": decision.write, "holder": decision.holder}
    if decision.previous:
        result["previous"] = decision.previous
    return result
