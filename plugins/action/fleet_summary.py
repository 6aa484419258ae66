# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet summary on the controller: one table from the hosts' variables, printed and written locally.

A copy task delegated to localhost would start a local connection and two modules for a file the controller
can write itself; this writes it atomically, only when its content differs, and reports no change (a report,
not managed state). The deploy playbook writes it with fleet_report, which shares this code
(plugin_utils/fleet_summary.py).
"""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_summary import SUMMARY_SPEC, summary_result
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once

ARGUMENT_SPEC = SUMMARY_SPEC


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        # The rows and the deployments' lines read each host: its variables gathered once.
        return summary_result(args, read_once(task_vars.get("hostvars") or {}))
