# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's Prometheus ``file_sd`` targets, written on the controller from the hosts' reports of this run
(plugin_utils/fleet_targets.py, shared with fleet_report)."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_targets import TARGETS_SPEC, targets_result
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once

ARGUMENT_SPEC = TARGETS_SPEC


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        return targets_result(args, read_once(task_vars.get("hostvars") or {}), check_mode=self._task.check_mode,
                              diff=self._task.diff)
