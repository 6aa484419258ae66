# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's placement, on the controller: the fleet's deployments placed by memory from what each
host's judge read (fleet_placement.place), and each host's share of the result.

Nothing runs on a host. A deployment with a replica that has no room fails the task naming its need and the best
candidate's free memory, before any host changes (the playbook's rescue fails every host).
"""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import (
    deployment_versions,
    host_changes,
    placement_inputs,
    summary_rows,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import HostReading
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.fleet_placement import PlacementError, place
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.placement_view import fleet_placement_table, plain

ARGUMENT_SPEC = {
    "deployments": {"type": "list", "elements": "raw", "required": True},
    "hosts": {"type": "list", "elements": "str", "required": True},
    "fleet": {"type": "list", "elements": "str", "default": None},
}


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        result: dict = {}
        hostvars = task_vars.get("hostvars") or {}
        left_out = [host for host in args["fleet"] or [] if host not in args["hosts"]]
        if left_out:
            # The replicas of the hosts left out are not known: placing without them could run a replica twice.
            result.update(failed=True, refused=True, msg=(
                f"{role_vars.DEPLOYMENTS} is placed over the whole fleet, and --limit leaves out "
                f"{', '.join(left_out[:10])}{' ...' if len(left_out) > 10 else ''}: run without --limit (hosts "
                "with nothing to do change nothing)"))
            return result
        readings, host_fields = {}, {}
        for host in args["hosts"]:
            variables = hostvars.get(host) or {}
            judgement = variables.get("_llama_server_judgement") or {}
            reading = HostReading.from_dict(plain(judgement.get("placement")))
            if reading:
                readings[host] = reading
                host_fields[host] = plain(role_vars.host_fields(variables))
        deployments = plain(args["deployments"])
        # The deployments' versions as the first host read layers them with its presets (its judge did the same).
        first = next(iter(readings), None)
        presets = plain(role_vars.presets(hostvars.get(first) or {})) if first else {}
        wanted, hosts, current, errors, notes = placement_inputs(deployments, readings, host_fields,
                                                                 deployment_versions(deployments, presets))
        if errors:
            if self._task.check_mode:
                errors.append("in check mode a host that lacks the engine, the planning runtime or a model gets "
                              "none of them, so it cannot plan a need")
            result.update(failed=True, refused=True, msg="; ".join(errors) + " (nothing was changed)", errors=errors)
            return result
        try:
            placement = place(wanted, hosts, current)
        except PlacementError as err:
            result.update(failed=True, refused=True, msg=f"{role_vars.DEPLOYMENTS}: {err} (nothing was changed)")
            return result
        placement["notes"] += [{"id": "placement.duplicate", "text": note} for note in notes]
        table = fleet_placement_table(placement)
        result.update(changed=False, refused=False, placement=placement, table=table,
                      deployments=summary_rows(placement), hosts=host_changes(placement, readings))
        if placement["unplaced"]:
            refused = [f"deployment {entry['deployment']} replica {entry['replica']}: {entry['why']}"
                       for entry in placement["unplaced"]]
            result.update(failed=True, refused=True, msg="; ".join(refused) + " (nothing was changed)",
                          unplaced=refused)
        return result
