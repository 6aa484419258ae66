# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout lock's rules: who holds a host, and whether a rollout may take it.

Pure. ``llama_server_lock`` applies them to the lock file; the host judge (``llama_server_host``) reads the same
file and refuses, with the same words, a host that another rollout holds.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import LOCK_LEASE_BOUNDS, LOCK_PATH


class LockHeld(Exception):
    """Another rollout holds the host; the message names it."""

    def __init__(self, message: str, holder: Mapping):
        super().__init__(message)
        self.holder = dict(holder)


@dataclass(frozen=True)
class LockDecision:
    holder: dict  # the lock's holder afterwards ({} once released)
    write: bool  # whether the file must be rewritten
    previous: dict = field(default_factory=dict)  # a holder taken over


def holder_id(holder: Mapping) -> str:
    """The same rollout, whatever task asks: its controller, process and that process's start."""
    return f"{holder.get('controller', '')}:{holder.get('pid', '')}:{holder.get('pid_start', '')}"


def describe(holder: Mapping) -> str:
    # In UTC: the same words on every controller and host, whatever their time zones.
    taken = datetime.datetime.fromtimestamp(int(holder.get("taken", 0) or 0), tz=datetime.timezone.utc)  # noqa: UP017 (targets may run Python < 3.11)
    started = taken.strftime("%Y-%m-%d %H:%M:%S UTC")
    return (f"controller {holder.get('controller', '?')}, pid {holder.get('pid', '?')}, started {started}"
            f" (user {holder.get('user', '?')}, playbook {holder.get('playbook', '?')})")


def held_message(holder: Mapping, path: str, lease_s: int) -> str:
    return (f"another rollout holds this host: {describe(holder)}. Wait for it to end; if it is gone (another "
            f"controller), remove {path} or wait for its lease ({lease_s} s).")


def lease_refused(lease_s: int) -> str:
    """Why a lease of ``lease_s`` seconds is refused ("" when it is within the bounds)."""
    low, high = LOCK_LEASE_BOUNDS
    if not low <= lease_s <= high:
        return f"lease_s={lease_s}: a lease is from {low} to {high} seconds"
    return ""


def expired(current: Mapping, lease_s: int, now: int) -> bool:
    return bool(current) and now - int(current.get("taken", 0)) > lease_s


def decide(current: Mapping, me: Mapping, *, state: str, lease_s: int, take_over: str, now: int,
           path: str = LOCK_PATH) -> LockDecision:
    """What acquiring or releasing does to a lock that ``current`` holds ({} = free); LockHeld when refused."""
    held = bool(current)
    mine = held and holder_id(current) == holder_id(me)
    if state == "released":
        return LockDecision(holder={}, write=True) if mine else LockDecision(holder=dict(current), write=False)
    if mine:
        return LockDecision(holder=dict(current), write=False)
    gone = held and take_over and take_over == holder_id(current)
    if held and not (expired(current, lease_s, now) or gone):
        raise LockHeld(held_message(current, path, lease_s), current)
    return LockDecision(holder={**me, "taken": now}, write=True, previous=dict(current) if held else {})
