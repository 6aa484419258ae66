# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's run, once, on the controller: its hosts, the fleet's inventory and its gateways, as the fact
``llama_fleet_run`` (plugin_utils/fleet_run.py) that every play reads by name; and the fleet's settings checked
before anything changes (``refusal`` in the fact: the playbook fails every host with it, since a failed run_once
task would fail one host only)."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_ledger
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import RUN_FACT, run_facts

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "inventory_hosts": {"type": "list", "elements": "str", "required": True},
    "gateway_group": {"type": "str", "required": True},
    "unreachable": {"type": "raw", "default": None},
    "ledger_path": {"type": "str", "default": "./fleet-ledger.json"},
    "fleet_name": {"type": "str", "default": None},
    "placing": {"type": "bool", "default": False},
}


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        facts = run_facts(args["hosts"], args["inventory_hosts"], args["gateway_group"], task_vars.get("groups") or {})
        facts["refusal"] = fleet_ledger.settings_refusal(
            task_vars.get("hostvars") or {}, args["inventory_hosts"], unreachable=args["unreachable"],
            ledger_path=args["ledger_path"], fleet=args["fleet_name"] or "", placing=args["placing"])
        return {"changed": False, "ansible_facts": {RUN_FACT: facts}}
