# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who a rollout is, seen from the controller, and whether a holder of the rollout lock still runs here.

The target cannot see the controller's processes: the lock action and the host judge name the holder (this
controller, the ansible-playbook process, that process's start time, the user, the play) and judge whether a
holder on this controller is gone.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping


def process_start(pid: int, proc: str = "/proc") -> str:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat); "" when it is gone."""
    try:
        with open(f"{proc}/{pid}/stat", encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: count from its closing one. A zombie (state Z,
    # killed but not yet reaped by its parent) has stopped running.
    fields = text[text.rindex(")") + 2:].split()
    if len(fields) <= 19 or fields[0] in ("Z", "X"):
        return ""
    return fields[19]


def this_controller() -> str:
    return socket.gethostname()


def this_rollout(task_vars: Mapping, extra: Mapping | None = None) -> dict:
    """The holder for this run: task workers are forked from the ansible-playbook process, which is the rollout;
    its start time tells it from a later process that got the same pid."""
    playbook_pid = os.getppid()
    return {
        "controller": this_controller(),
        "pid": playbook_pid,
        "pid_start": process_start(playbook_pid),
        "user": getpass.getuser(),
        "playbook": str(task_vars.get("ansible_play_name") or "?"),
        **(extra or {}),
    }


def holder_alive(holder: Mapping, controller: str, proc: str = "/proc") -> bool:
    """Whether the holder still runs; a holder on another controller cannot be seen from here: alive."""
    if holder.get("controller") != controller:
        return True
    try:
        pid = int(holder.get("pid", 0))
    except (TypeError, ValueError):
        return False
    return pid > 0 and process_start(pid, proc) == str(holder.get("pid_start", ""))
