# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's rollout, once, on the controller: the hosts with work in order (the canary first) and the
batch sizes, as the fact ``llama_fleet_rollout`` (plugin_utils/fleet_run.py) that the rollout play reads by name,
with each model's bound (``allowed``) and a ``refusal`` when a model would restart while its bound lets none of its
replicas out: the task then fails with it (run once, it fails every host of the play, before the rollout)."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_bounds
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import ROLLOUT_FACT, rollout, serial_refusal

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "gateways": {"type": "list", "elements": "str", "default": []},
    "serial": {"type": "raw", "default": [1, "100%"]},
    "max_unavailable": {"type": "raw", "default": None},
    "max_surge": {"type": "raw", "default": None},
    "deployments": {"type": "raw", "default": None},
}

# The options fleet_variables reads from the deploy playbook's variables of these names.
FLEET_VARIABLES = {"serial": role_vars.SERIAL, "max_unavailable": role_vars.MAX_UNAVAILABLE,
                   "max_surge": role_vars.MAX_SURGE, "deployments": role_vars.DEPLOYMENTS}


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    FLEET_VARIABLES = FLEET_VARIABLES

    def act(self, args: dict, task_vars: dict) -> dict:
        try:
            fleet, deployments = role_vars.rollout_bounds_of(args["max_unavailable"], args["max_surge"],
                                                             args["deployments"])
        except rollout_bounds.BoundError as err:
            return {"failed": True, "msg": str(err)}
        refusal = serial_refusal(args["serial"])
        if refusal:
            return {"failed": True, "msg": refusal}
        planned = rollout(task_vars.get("hostvars") or {}, args["hosts"], args["gateways"], args["serial"],
                          fleet=fleet, deployments=deployments)
        found = {"changed": False, "ansible_facts": {ROLLOUT_FACT: planned}}
        return {**found, "failed": True, "msg": planned["refusal"]} if planned.get("refusal") else found
