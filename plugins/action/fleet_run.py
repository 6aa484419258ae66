# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's run, once, on the controller: its hosts, the fleet's inventory and its gateways, as the fact
``llama_fleet_run`` (plugin_utils/fleet_run.py) that every play reads by name."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import RUN_FACT, run_facts

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "inventory_hosts": {"type": "list", "elements": "str", "required": True},
    "gateway_group": {"type": "str", "required": True},
}


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        facts = run_facts(args["hosts"], args["inventory_hosts"], args["gateway_group"], task_vars.get("groups") or {})
        return {"changed": False, "ansible_facts": {RUN_FACT: facts}}
