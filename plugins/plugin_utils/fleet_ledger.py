# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The placement ledger on the controller: read and written beside the run (``_placement/ledger.py`` decides what
is in it), and the run's scope (``_placement/run_scope.py``) from the hosts' variables.

Used by the actions ``fleet_run`` (checks the ledger and the settings before anything changes), ``fleet_deployments``
(places with the scope), and ``fleet_ledger`` and ``fleet_report`` (record the run: ``ledger_result``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import (
    Ledger,
    LedgerError,
    ledger_text,
    read_ledger,
    updated,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import HostReading, PlacedReplica
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.run_scope import (
    UNREACHABLE_POLICIES,
    RunScope,
    run_scope,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_bytes, write_atomically
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import DONE, JUDGEMENT, STATUS
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.placement_view import plain


class FleetSettingError(ValueError):
    """A setting of the fleet (a variable, or the ledger file) that the run refuses, naming it."""


def load(path: str, fleet: str, inventory: Sequence[str]) -> Ledger:
    """The ledger at ``path`` (none yet: an empty one). Raises FleetSettingError naming the file, what is wrong, and
    that it is left as it is."""
    try:
        data = read_bytes(path)
    except OSError as err:
        raise FleetSettingError(f"{role_vars.LEDGER_PATH}: cannot read {path}: {err}") from None
    try:
        return read_ledger(data.decode("utf-8") if data else "", fleet, inventory)
    except (LedgerError, UnicodeDecodeError) as err:
        raise FleetSettingError(
            f"{role_vars.LEDGER_PATH}: {path} cannot be this fleet's placement ledger: {err}. It is left as it is "
            f"(never overwritten): move it away, or give another path, or {role_vars.FLEET_NAME} if it is this "
            "fleet's under another name") from None


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold the ledger's lock (``<path>.lock`` beside it) while a run reads, merges and writes it: the slices of a job
    that end at the same time merge one after the other, and none loses another's hosts."""
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def exists(path: str) -> bool:
    return read_bytes(path) is not None


def save(path: str, ledger: Ledger) -> bool:
    """Write the ledger when its text differs; whether it did."""
    data = ledger_text(ledger).encode()
    if read_bytes(path) == data:
        return False
    write_atomically(path, data, 0o644, make_dirs=False)
    return True


def policy(value) -> str:
    """``llama_fleet_unreachable``, checked."""
    text = "replace" if value is None else value
    if text not in UNREACHABLE_POLICIES:
        raise FleetSettingError(f"{role_vars.UNREACHABLE}: {value!r} is not one of {', '.join(UNREACHABLE_POLICIES)} "
                                "(replace: place a lost host's replicas again elsewhere; keep: count them where they "
                                "were, for a short outage)")
    return text


def cordons(hostvars: Mapping, hosts: Sequence[str]) -> dict[str, bool | None]:
    """Each host's ``llama_fleet_cordoned`` (None: not set). Raises FleetSettingError naming every host that sets
    something else than a boolean."""
    found, wrong = {}, []
    for host in hosts:
        try:
            found[host] = role_vars.cordon(hostvars.get(host) or {})
        except ValueError as err:
            wrong.append(f"{host}: {err}")
    if wrong:
        raise FleetSettingError("; ".join(wrong))
    return found


def cordon_request(inventory: Sequence[str], cordon: Sequence[str], uncordon: Sequence[str]) -> dict[str, bool]:
    """A maintenance run's request (``llama_fleet_cordon``, ``llama_fleet_uncordon``) by host. Raises
    FleetSettingError for a host that is not the fleet's, or one named in both."""
    unknown = sorted((set(cordon) | set(uncordon)) - set(inventory))
    both = sorted(set(cordon) & set(uncordon))
    problems = []
    if unknown:
        problems.append(f"{role_vars.CORDON_REQUEST}/{role_vars.UNCORDON_REQUEST}: {', '.join(unknown)} "
                        f"{'is' if len(unknown) == 1 else 'are'} not a host of the fleet ({len(inventory)} host(s))")
    if both:
        problems.append(f"{role_vars.CORDON_REQUEST}/{role_vars.UNCORDON_REQUEST}: {', '.join(both)}: both cordoned "
                        "and uncordoned")
    if problems:
        raise FleetSettingError("; ".join(problems))
    return {**dict.fromkeys(cordon, True), **dict.fromkeys(uncordon, False)}


def effective_cordons(hostvars: Mapping, inventory: Sequence[str], request: Mapping[str, bool],
                      ledger: Ledger | None) -> dict[str, bool]:
    """Whether each fleet host is cordoned in this run: its ``llama_fleet_cordoned`` when set (it wins), else the
    maintenance run's request, else the ledger's record, else not. Raises FleetSettingError naming a host whose
    variable is not a boolean, or contradicts the request (the inventory would win, silently)."""
    given = cordons(hostvars, inventory)
    against = sorted(host for host, wanted in request.items() if given.get(host) not in (None, wanted))
    if against:
        raise FleetSettingError(
            f"{', '.join(against)}: {role_vars.CORDONED} in the inventory says otherwise than this maintenance run, "
            "and the inventory wins: change it there, or remove it to let the ledger's record speak")
    found = {}
    for host in inventory:
        if given.get(host) is not None:
            found[host] = bool(given[host])
        elif host in request:
            found[host] = request[host]
        else:
            record = ledger.hosts.get(host) if ledger else None
            found[host] = bool(record and record.cordoned)
    return found


def settings_refusal(hostvars: Mapping, inventory: Sequence[str], *, unreachable, ledger_path: str, fleet: str,
                     request: Mapping[str, bool]) -> tuple[str, list[str], list[str]]:
    """(why the run's fleet settings refuse it, "" when they do not; the fleet hosts cordoned in this run; those of
    them whose hand-placed instances stop): the unreachable-host policy, the ledger, every fleet host's cordon and
    what a cordon does with its instances."""
    problems, cordoned = [], []
    stopping = []
    for host in inventory:
        try:
            if role_vars.cordoned_instances(hostvars.get(host) or {}) == "stop":
                stopping.append(host)
        except ValueError as err:
            problems.append(f"{host}: {err}")
    try:
        policy(unreachable)
    except FleetSettingError as err:
        problems.append(str(err))
    ledger = None
    try:
        ledger = load(ledger_path, fleet, inventory)
    except FleetSettingError as err:
        problems.append(str(err))
    try:
        cordoned = [host for host, state in effective_cordons(hostvars, inventory, request, ledger).items() if state]
    except FleetSettingError as err:
        problems.append(str(err))
    return "; ".join(problems), cordoned, [host for host in stopping if host in set(cordoned)]


def scope(hostvars: Mapping, inventory: Sequence[str], run_hosts: Sequence[str],
          readings: Mapping[str, HostReading], *, ledger: Ledger, unreachable,
          cordoned: Sequence[str] | None = None) -> RunScope:
    """The run's scope: what the placement may do on each fleet host (run_scope.run_scope), from the hosts'
    statuses and cordons (``cordoned``: the run's cordoned hosts, as fleet_run found them; None: each host's
    variable, else the ledger's record)."""
    statuses = {host: (hostvars.get(host) or {}).get(STATUS) for host in inventory}
    given = (cordons(hostvars, inventory) if cordoned is None
             else {host: host in set(cordoned) for host in inventory})
    return run_scope(inventory, run_hosts, readings, statuses=statuses, cordons=given, ledger=ledger,
                     unreachable=policy(unreachable))


# The ledger's record of a run (the action fleet_ledger's options, and fleet_report's ledger part).
LEDGER_SPEC = {
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


def ledger_result(args: Mapping, hostvars: Mapping, *, check_mode: bool = False, diff: bool = False) -> dict:
    """The run recorded in the ledger (LEDGER_SPEC's options, checked), as an action's result: the hosts this run
    read get what they run now (``placed``, the placement's ``ledger``), the others keep their entries, and a
    maintenance run's cordons are recorded. Nothing of a refused run. Check mode writes nothing, its lock neither."""
    inventory = args["inventory_hosts"]
    if args["refused"]:
        # The run was refused before any host changed: nothing of it is recorded, its cordons neither.
        return {"changed": False, "path": args["path"], "msg": "the run was refused: the ledger is left as it was"}
    if args["placed"] is None and not args["cordon"] and not args["uncordon"]:
        return {"changed": False, "path": args["path"], "msg": "nothing to record (no placement, no cordon)"}
    try:
        request = cordon_request(inventory, args["cordon"], args["uncordon"])
    except FleetSettingError as err:
        return {"failed": True, "msg": f"{err} (the ledger was not changed)"}
    placed = ran_replicas(hostvars, plain(args["placed"] or {}))
    try:
        with contextlib.nullcontext() if check_mode else locked(args["path"]):
            before = load(args["path"], args["fleet_name"], inventory)
            after = updated(before, inventory, placed=placed, cordoned=request)
            old, new = ledger_text(before), ledger_text(after)
            changed = (new != old or not exists(args["path"])) and (check_mode or save(args["path"], after))
    except FleetSettingError as err:
        return {"failed": True, "msg": f"{err} (the ledger was not changed)"}
    except OSError as err:
        return {"failed": True, "msg": f"cannot write the placement ledger to {args['path']}: {err}"}
    result = {"path": args["path"], "hosts": sorted(placed), "changed": bool(changed),
              "cordoned": sorted(host for host, entry in after.hosts.items() if entry.cordoned)}
    if diff and changed:
        result["diff"] = {"before": old, "after": new, "before_header": args["path"], "after_header": args["path"]}
    return result
