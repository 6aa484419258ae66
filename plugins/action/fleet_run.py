# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's run, once, on the controller: its hosts, the fleet's inventory and its gateways, as the fact
``llama_fleet_run`` (plugin_utils/fleet_run.py) that every play reads by name, with ``llama_fleet_rollout`` reset to
no rollout; and the fleet's settings, the rollout's serial and the scrape targets file checked before anything
changes: the task fails with what is wrong (run once, it fails every host of the play), and the fact's ``refusal``
says it too."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_bounds
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_ledger, role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import (
    NO_ROLLOUT,
    ROLLOUT_FACT,
    RUN_FACT,
    run_facts,
    serial_refusal,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.targets_file import TargetsFileError, read_targets

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "inventory_hosts": {"type": "list", "elements": "str", "required": True},
    "gateway_group": {"type": "str", "required": True},
    "unreachable": {"type": "raw", "default": None},
    "ledger_path": {"type": "str", "default": "./fleet-ledger.json"},
    "fleet_name": {"type": "str", "default": "llama_fleet"},
    "cordon": {"type": "list", "elements": "str", "default": []},
    "uncordon": {"type": "list", "elements": "str", "default": []},
    "maintenance": {"type": "bool", "default": False},
    "max_unavailable": {"type": "raw", "default": None},
    "max_surge": {"type": "raw", "default": None},
    "deployments": {"type": "raw", "default": None},
    "metrics_targets_path": {"type": "str", "default": None},
    "serial": {"type": "raw", "default": [1, "100%"]},
}

# The options fleet_variables reads from the deploy playbook's variables of these names.
FLEET_VARIABLES = {"gateway_group": role_vars.GATEWAY_GROUP, "unreachable": role_vars.UNREACHABLE,
                   "ledger_path": role_vars.LEDGER_PATH, "cordon": role_vars.CORDON_REQUEST,
                   "uncordon": role_vars.UNCORDON_REQUEST, "maintenance": role_vars.MAINTENANCE,
                   "max_unavailable": role_vars.MAX_UNAVAILABLE,
                   "max_surge": role_vars.MAX_SURGE, "deployments": role_vars.DEPLOYMENTS,
                   "metrics_targets_path": role_vars.METRICS_TARGETS_PATH, "serial": role_vars.SERIAL}


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    FLEET_VARIABLES = FLEET_VARIABLES

    def act(self, args: dict, task_vars: dict) -> dict:
        facts = run_facts(args["hosts"], args["inventory_hosts"], args["gateway_group"], task_vars.get("groups") or {})
        try:
            request = fleet_ledger.cordon_request(args["inventory_hosts"], args["cordon"], args["uncordon"])
        except fleet_ledger.FleetSettingError as err:
            request, refusal = {}, str(err)
        else:
            refusal = ""
            if args["maintenance"] and not request:
                refusal = (f"a maintenance run needs {role_vars.CORDON_REQUEST} or {role_vars.UNCORDON_REQUEST} "
                           "(a host, or a list of hosts): -e llama_fleet_cordon=HOST takes a host out, "
                           "-e llama_fleet_uncordon=HOST brings it back")
        more, cordoned, stopping = fleet_ledger.settings_refusal(
            read_once(task_vars.get("hostvars") or {}), args["inventory_hosts"], unreachable=args["unreachable"],
            ledger_path=args["ledger_path"], fleet=args["fleet_name"], request=request)
        refusals = (refusal, more, _bounds_refusal(args), serial_refusal(args["serial"]),
                    _targets_refusal(args["metrics_targets_path"]))
        facts.update(refusal="; ".join(part for part in refusals if part), cordoned=cordoned, stopping=stopping,
                     cordon=sorted(host for host, state in request.items() if state),
                     uncordon=sorted(host for host, state in request.items() if not state))
        # No rollout yet: fleet_rollout decides it when a host has work (its play matches no host otherwise).
        found = {"changed": False, "ansible_facts": {RUN_FACT: facts, ROLLOUT_FACT: dict(NO_ROLLOUT)}}
        return {**found, "failed": True, "msg": facts["refusal"]} if facts["refusal"] else found


def _targets_refusal(path: str | None) -> str:
    """Why the scrape targets file cannot be written at the end of the run (not this collection's), or ""."""
    if not path:
        return ""
    try:
        read_targets(path)
    except TargetsFileError as err:
        return str(err)
    return ""


def _bounds_refusal(args: dict) -> str:
    """Why the rollout's bounds (the fleet's, and the deployments' own) are wrong, or ""."""
    try:
        role_vars.rollout_bounds_of(args["max_unavailable"], args["max_surge"], args["deployments"])
    except rollout_bounds.BoundError as err:
        return str(err)
    return ""
