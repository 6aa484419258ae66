# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's placement, on the controller: the fleet's deployments placed by memory from what each
host's judge read (fleet_placement.place), and each host's share of the result.

Nothing runs on a host. The hosts this run does not read (outside --limit, unreachable, failed) count as the
placement ledger has them (plugin_utils/fleet_ledger.py, _placement/run_scope.py). A replica with no room refuses
the run naming its need and the best candidate's free memory, before any host changes (the playbook fails every
host), when the run reads the whole fleet or when the replica runs on a host that would lose it (a cordon); in a
partial run the others are reported short and the run goes on.
"""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_bounds
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import (
    deployment_versions,
    host_changes,
    lost_replicas,
    name_placements,
    placement_inputs,
    renewals,
    replica_name,
    summary_rows,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import HostReading, PlacedReplica
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.run_scope import RunScope
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.fleet_placement import PlacementError, place
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_ledger, role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.placement_view import fleet_placement_table, plain

ARGUMENT_SPEC = {
    "deployments": {"type": "list", "elements": "raw", "required": True},
    "hosts": {"type": "list", "elements": "str", "required": True},
    "fleet": {"type": "list", "elements": "str", "default": None},
    "run_hosts": {"type": "list", "elements": "str", "default": None},
    "unreachable": {"type": "raw", "default": None},
    "ledger_path": {"type": "str", "default": "./fleet-ledger.json"},
    "fleet_name": {"type": "str", "default": "llama_fleet"},
    "cordoned": {"type": "list", "elements": "str", "default": None},
    "max_unavailable": {"type": "raw", "default": None},
    "max_surge": {"type": "raw", "default": None},
}


def _refused(result: dict, msg: str, **more) -> dict:
    result.update(failed=True, refused=True, msg=msg, **more)
    return result


def _ledger_replicas(placement: dict, shares: dict, versions: dict) -> dict:
    """What each read host runs once its rollout is done (its share), as the ledger records it."""
    memory = {(p["deployment"], p["replica"]): p["memory_mib"] for p in placement["placements"]}
    return {host: [PlacedReplica(instance=entry["name"], deployment=entry["deployment"], replica=entry["replica"],
                                 port=entry["port"], cuda_visible_devices=entry["cuda_visible_devices"],
                                 memory_mib=memory.get((entry["deployment"], entry["replica"]), 0),
                                 version=versions.get(entry["deployment"], ""), current=True).as_dict()
                   for entry in share["instances"]]
            for host, share in shares.items()}


def _scope_view(scope: RunScope, lost: list[dict], short: list[dict], placement: dict) -> dict:
    """The run's scope as the summary and the ledger read it."""
    moved = {}
    for entry in placement["placements"]:
        if entry.get("moved_from") in scope.cordoned:
            moved.setdefault(entry["moved_from"], []).append(
                f"{replica_name(entry['deployment'], entry['replica'])} to {entry['host']}")
    return {"read": list(scope.read), "outside": list(scope.outside), "unreachable": list(scope.unreachable),
            "failed": list(scope.failed), "frozen": sorted(scope.frozen), "cordoned": list(scope.cordoned),
            "cordoned_elsewhere": list(scope.cordoned_elsewhere), "moved_off": moved, "lost": lost, "short": short}


# The options fleet_variables reads from the deploy playbook's variables of these names.
FLEET_VARIABLES = {"deployments": role_vars.DEPLOYMENTS, "unreachable": role_vars.UNREACHABLE,
                   "ledger_path": role_vars.LEDGER_PATH, "max_unavailable": role_vars.MAX_UNAVAILABLE,
                   "max_surge": role_vars.MAX_SURGE}


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    FLEET_VARIABLES = FLEET_VARIABLES

    def act(self, args: dict, task_vars: dict) -> dict:
        result: dict = {}
        # Read in three passes (readings, host fields, the scope): each host's variables gathered once.
        hostvars = read_once(task_vars.get("hostvars") or {})
        inventory = list(args["fleet"] if args["fleet"] is not None else args["hosts"])
        run_hosts = list(args["run_hosts"] if args["run_hosts"] is not None else args["hosts"])
        readings, host_fields = {}, {}
        for host in args["hosts"]:
            variables = hostvars.get(host) or {}
            judgement = variables.get("_llama_server_judgement") or {}
            reading = HostReading.from_dict(plain(judgement.get("placement")))
            if reading:
                readings[host] = reading
        for host in inventory:
            host_fields[host] = plain(role_vars.host_fields(hostvars.get(host) or {}))
        try:
            ledger = fleet_ledger.load(args["ledger_path"], args["fleet_name"], inventory)
            scope = fleet_ledger.scope(hostvars, inventory, run_hosts, readings, ledger=ledger,
                                       unreachable=args["unreachable"], cordoned=args["cordoned"])
        except fleet_ledger.FleetSettingError as err:
            return _refused(result, f"{err} (nothing was changed)")
        if scope.unrecorded:
            return _refused(result, (
                f"{role_vars.DEPLOYMENTS}: the placement ledger {args['ledger_path']} has no record of "
                f"{', '.join(scope.unrecorded[:10])}{' ...' if len(scope.unrecorded) > 10 else ''}, which this run "
                "leaves out (--limit, or another slice): what runs there is not known, so placing without it could "
                "run a replica twice. Run once over the whole fleet (it records every host), then limit (nothing was "
                "changed)"))
        deployments = plain(args["deployments"])
        # The deployments' versions as the first host read layers them with its presets (its judge did the same).
        first = next(iter(readings), None)
        presets = plain(role_vars.presets(hostvars.get(first) or {})) if first else {}
        versions = deployment_versions(deployments, presets)
        wanted, hosts, current, errors, notes = placement_inputs(deployments, readings, host_fields, versions,
                                                                 scope)
        if errors:
            if self._task.check_mode:
                errors.append("in check mode a host that lacks the engine, the planning runtime or a model gets "
                              "none of them, so it cannot plan a need")
            return _refused(result, "; ".join(errors) + " (nothing was changed)", errors=errors)
        try:
            fleet_bounds, bounds = role_vars.rollout_bounds_of(args["max_unavailable"], args["max_surge"], deployments)
        except rollout_bounds.BoundError as err:
            return _refused(result, f"{err} (nothing was changed)")
        # Surge: how many start-first copies each deployment may run at once, of its replica count.
        surge = {entry["name"]: bounds.get(entry["name"], fleet_bounds).surge(int(entry.get("replicas", 1)))
                 for entry in wanted}
        renew = renewals(readings, current, surge, list(scope.cordoned))
        try:
            placement = place(wanted, hosts, current, renew=renew)
        except PlacementError as err:
            return _refused(result, f"{role_vars.DEPLOYMENTS}: {err} (nothing was changed)")
        name_placements(placement, readings)
        placement["notes"] += [{"id": "placement.duplicate", "text": note} for note in notes]
        placement["frozen"] = sorted(scope.frozen)
        lost = lost_replicas(scope, placement)
        # A replica that runs on a host this run reads, and finds no new home, would be removed with nowhere to go
        # (a cordon with no room): refused, whole run or not.
        running = {(entry["deployment"], entry["replica"]) for entry in current if entry["host"] in readings}
        stranded = [entry for entry in placement["unplaced"] if (entry["deployment"], entry["replica"]) in running]
        short = [] if (scope.whole or stranded) else list(placement["unplaced"])
        shares = host_changes(placement, readings)
        table = fleet_placement_table(placement)
        result.update(changed=False, refused=False, placement=placement, table=table,
                      deployments=summary_rows(placement, lost), hosts=shares,
                      scope=_scope_view(scope, lost, short, placement),
                      ledger=_ledger_replicas(placement, shares, versions))
        if placement["unplaced"] and not short:
            cordoned_on = {(entry["deployment"], entry["replica"]): entry["host"] for entry in current
                           if entry["host"] in scope.cordoned}
            refused = []
            for entry in placement["unplaced"]:
                host = cordoned_on.get((entry["deployment"], entry["replica"]))
                why = f"it runs on {host}, which is cordoned, and no other host can take it: " if host else ""
                refused.append(f"deployment {entry['deployment']} replica {entry['replica']}: {why}{entry['why']}")
            _refused(result, "; ".join(refused) + " (nothing was changed)", unplaced=refused)
        return result
