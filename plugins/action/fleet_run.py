# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's run, once, on the controller: its hosts, the fleet's inventory and its gateways, as the fact
``llama_fleet_run`` (plugin_utils/fleet_run.py) that every play reads by name."""

from __future__ import annotations

import copy

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import RUN_FACT, run_facts

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "inventory_hosts": {"type": "list", "elements": "str", "required": True},
    "gateway_group": {"type": "str", "required": True},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False  # nothing runs on a host

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=copy.deepcopy(ARGUMENT_SPEC))
        facts = run_facts(args["hosts"], args["inventory_hosts"], args["gateway_group"],
                          (task_vars or {}).get("groups") or {})
        result.update(changed=False, ansible_facts={RUN_FACT: facts})
        return result
