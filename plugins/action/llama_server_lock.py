# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of the rollout lock: who holds it, and whether a holder on this controller is still alive.

The target module cannot see the controller's processes; this part names the holder (this controller, the
ansible-playbook process, that process's start time, the user) and, when the lock is held by a process of this
controller that no longer runs (an interrupted rollout), asks the module to take it over.
"""

from __future__ import annotations

import getpass
import os
import socket

from ansible.plugins.action import ActionBase

MODULE = "llamafleet.llamacpp.llama_server_lock"


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


def holder_alive(holder: dict, controller: str, proc: str = "/proc") -> bool:
    """Whether the holder still runs; a holder on another controller cannot be seen from here: alive."""
    if holder.get("controller") != controller:
        return True
    try:
        pid = int(holder.get("pid", 0))
    except (TypeError, ValueError):
        return False
    return pid > 0 and process_start(pid, proc) == str(holder.get("pid_start", ""))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        args = dict(self._task.args)
        controller = socket.gethostname()
        # Task workers are forked from the ansible-playbook process: it is the rollout, and its start time
        # tells it from a later process that got the same pid.
        playbook_pid = os.getppid()
        holder = {
            "controller": controller,
            "pid": playbook_pid,
            "pid_start": process_start(playbook_pid),
            "user": getpass.getuser(),
            "playbook": str(task_vars.get("ansible_play_name") or "?"),
            **(args.get("holder") or {}),
        }
        args["holder"] = holder
        found = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        if found.get("locked") and not holder_alive(found.get("holder") or {}, controller):
            args["take_over"] = found.get("holder_id", "")
            found = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            if not found.get("failed"):
                self._display.warning(f"took over the rollout lock of a rollout that is gone: {found.get('previous')}")
        found.pop("invocation", None)
        result.update(found)
        return result
