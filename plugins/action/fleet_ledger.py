# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The placement ledger after a run, on the controller: the hosts this run read get what they run now, the others
keep their entries, the hosts that left the inventory leave it; a maintenance run records cordons
(``_placement/ledger.py`` decides; ``plugin_utils/fleet_ledger.py`` reads and writes, for this action and for
fleet_report)."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_ledger import LEDGER_SPEC, ledger_result
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once

ARGUMENT_SPEC = LEDGER_SPEC


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        return ledger_result(args, read_once(task_vars.get("hostvars") or {}), check_mode=self._task.check_mode,
                             diff=self._task.diff)
