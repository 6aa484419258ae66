# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The placement ledger after a run, on the controller: the hosts this run read get what they run now, the others
keep their entries, the hosts that left the inventory leave it; a maintenance run records cordons
(``_placement/ledger.py`` decides; ``plugin_utils/fleet_ledger.py`` reads and writes)."""

from __future__ import annotations

import contextlib

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import ledger_text, updated
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import HostReading, PlacedReplica
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_ledger
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import DONE, JUDGEMENT, STATUS
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.placement_view import plain

ARGUMENT_SPEC = {
    "path": {"type": "str", "default": "./fleet-ledger.json"},
    "fleet_name": {"type": "str", "default": "llama_fleet"},
    "inventory_hosts": {"type": "list", "elements": "str", "required": True},
    "placed": {"type": "dict", "default": None},
    "cordon": {"type": "list", "elements": "str", "default": []},
    "uncordon": {"type": "list", "elements": "str", "default": []},
    "refused": {"type": "bool", "default": False},
}


def ran_replicas(hostvars, placed: dict) -> dict[str, list[PlacedReplica]]:
    """What each host the run read runs now: its share of the placement once its rollout is done (status ok), else
    what its judge found there (its rollout did not run, or did not finish)."""
    found = {}
    for host, share in placed.items():
        variables = hostvars.get(host) or {}
        if variables.get(STATUS) == DONE:
            found[host] = [PlacedReplica.from_dict(entry) for entry in share or []]
            continue
        reading = HostReading.from_dict(plain((variables.get(JUDGEMENT) or {}).get("placement")))
        if reading is not None:
            found[host] = list(reading.placed)
    return found


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        inventory = args["inventory_hosts"]
        if args["refused"]:
            # The run was refused before any host changed: nothing of it is recorded, its cordons neither.
            return {"changed": False, "path": args["path"], "msg": "the run was refused: the ledger is left as it was"}
        if args["placed"] is None and not args["cordon"] and not args["uncordon"]:
            return {"changed": False, "path": args["path"], "msg": "nothing to record (no placement, no cordon)"}
        try:
            cordons = fleet_ledger.cordon_request(inventory, args["cordon"], args["uncordon"])
        except fleet_ledger.FleetSettingError as err:
            return {"failed": True, "msg": f"{err} (the ledger was not changed)"}
        placed = ran_replicas(read_once(task_vars.get("hostvars") or {}), plain(args["placed"] or {}))
        try:
            # Check mode writes nothing, its lock file neither.
            with contextlib.nullcontext() if self._task.check_mode else fleet_ledger.locked(args["path"]):
                before = fleet_ledger.load(args["path"], args["fleet_name"], inventory)
                after = updated(before, inventory, placed=placed, cordoned=cordons)
                old, new = ledger_text(before), ledger_text(after)
                changed = (new != old or not fleet_ledger.exists(args["path"])) and (
                    self._task.check_mode or fleet_ledger.save(args["path"], after))
        except fleet_ledger.FleetSettingError as err:
            return {"failed": True, "msg": f"{err} (the ledger was not changed)"}
        except OSError as err:
            return {"failed": True, "msg": f"cannot write the placement ledger to {args['path']}: {err}"}
        result = {"path": args["path"], "hosts": sorted(placed), "cordoned": sorted(
            host for host, entry in after.hosts.items() if entry.cordoned)}
        result["changed"] = bool(changed)
        if self._task.diff and changed:
            result["diff"] = {"before": old, "after": new, "before_header": args["path"], "after_header": args["path"]}
        return result
