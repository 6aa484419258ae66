# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of the rollout lock: who holds it, and whether a holder on this controller is still alive.

The target module cannot see the controller's processes; this part names the holder (this controller, the
ansible-playbook process, that process's start time, the user) and, when the lock is held by a process of this
controller that no longer runs (an interrupted rollout), asks the module to take it over.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.rollout_holder import (
    holder_alive,
    this_controller,
    this_rollout,
)

MODULE = "llamafleet.llamacpp.llama_server_lock"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        args = dict(self._task.args)
        args["holder"] = this_rollout(task_vars, args.get("holder"))
        found = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        if found.get("locked") and not holder_alive(found.get("holder") or {}, this_controller()):
            args["take_over"] = found.get("holder_id", "")
            found = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            if not found.get("failed"):
                self._display.warning(f"took over the rollout lock of a rollout that is gone: {found.get('previous')}")
        found.pop("invocation", None)
        result.update(found)
        return result
