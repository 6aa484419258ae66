# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's placement: the fleet's deployments checked, handed to each host's judge, turned into
``place()``'s inputs from what the judges read (``readings.HostReading``), and the result turned back into each
host's instances.

Pure. A placed replica is an instance named ``<deployment>-<replica>`` (the replica's number from 0) that carries
``placement: {deployment, replica}``; the instance step records it, with the replica's port and cards, in the
instance's state file once the replica is verified, and the judge finds the replicas a host runs by those records.
No role variable is known here: the controller's plugins read the hosts' variables (``plugin_utils/role_vars.py``)
and pass their values, and the variables' names for the messages that name them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_bounds
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import instance_errors
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import (
    CORDONED,
    FROZEN,
    OPEN,
    PlacementError,
    read_deployments,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import HostReading, PlacedReplica
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.run_scope import RunScope
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import (
    PresetLayerError,
    preset_and_key,
    preset_version,
)

# The fields of a deployment: what the placement reads, and what its replicas run (an instance's fields).
PLACEMENT_FIELDS = ("name", "replicas", "gpus", "labels", "policy", "memory_mib", "ram_mib")
INSTANCE_FIELDS = ("preset", "settings", "environment", "api_key")
# How its replicas roll out (_gateway/rollout_bounds.py): its own bounds over the fleet's.
ROLLOUT_FIELDS = tuple(rollout_bounds.DEPLOYMENT_FIELDS)
FIELDS = PLACEMENT_FIELDS + INSTANCE_FIELDS + ROLLOUT_FIELDS
# How a deployment's key travels in the judge's no_log key map (an instance name has no space).
KEY_PREFIX = "deployment "
# "-1": no card at all, for a RAM replica on a host that has cards (llama.cpp then sees none).
NO_CARD = "-1"


def replica_name(deployment: str, replica: int) -> str:
    return f"{deployment}-{replica}"


# A replica's second name: a start-first copy on the host that runs it (surge) takes the name its running copy does
# not have, and keeps it until its next renewal there.
SECOND_NAME_SUFFIX = "-b"


def replica_names(deployment: str, replica: int) -> tuple[str, str]:
    """The two names a replica's instance may have."""
    first = replica_name(deployment, replica)
    return first, first + SECOND_NAME_SUFFIX


def copy_name(deployment: str, replica: int, running: str) -> str:
    """The name of a start-first copy beside a running copy named ``running`` (on the same host)."""
    first, second = replica_names(deployment, replica)
    return second if running == first else first


def placement_record(placement: Mapping | None, port, cuda_visible_devices) -> dict | None:
    """What a placed replica's state file records (the judge finds the fleet's replicas by it): its deployment,
    replica, port and cards. None for an instance placed by hand."""
    if not placement:
        return None
    return {"deployment": str(placement["deployment"]), "replica": int(placement["replica"]),
            "port": int(port or 0), "cuda_visible_devices": str(cuda_visible_devices or "")}


def _listed(deployments, listed_as: str = "deployments") -> list:
    if deployments is None:
        return []
    if isinstance(deployments, (str, bytes, Mapping)) or not isinstance(deployments, Sequence):
        raise PlacementError(f"{listed_as}: it must be a list of deployments (name, preset, replicas, ...)")
    return list(deployments)


def _as_placement_input(item: Mapping) -> dict:
    """The placement's fields of one deployment, the memory need given or not (read_deployments wants one)."""
    found = {field: item[field] for field in PLACEMENT_FIELDS if field in item}
    if found.get("memory_mib") in (None, ""):
        found["memory_mib"] = 1
    return found


def _instance(item: Mapping, replica: int, *, port: int | None = None, cards: str = "", name: str = "") -> dict:
    """Replica ``replica`` of a deployment as an instance of the role (named ``name``, else its first name)."""
    instance = {field: item[field] for field in INSTANCE_FIELDS if item.get(field) not in (None, "")}
    instance["name"] = name or replica_name(str(item.get("name")), replica)
    if port:
        instance["port"] = port
    if cards:
        instance["cuda_visible_devices"] = cards
    instance["placement"] = {"deployment": str(item.get("name")), "replica": replica}
    return instance


def _rollout_field_errors(item: Mapping, label: str) -> list[str]:
    """A deployment's own rollout bounds, each a number or a percentage (both at 0 is the fleet run's to refuse: it
    knows the fleet's values)."""
    errors = []
    for field in ROLLOUT_FIELDS:
        if item.get(field) not in (None, ""):
            try:
                rollout_bounds.read_bound(item[field], f"{label}: {field}")
            except rollout_bounds.BoundError as err:
                errors.append(str(err))
    return errors


def deployment_errors(deployments, presets, hand_instances=(), *, listed_as: str, hand_listed_as: str) -> list[str]:
    """Everything wrong with the fleet's deployments as one host sees them (its presets, its hand-placed
    instances); [] when they can be placed. Every message names the deployment and the field; ``listed_as`` and
    ``hand_listed_as`` are what the user calls the deployments and the hand-placed instances (their variables)."""
    try:
        listed = _listed(deployments, listed_as)
    except PlacementError as err:
        return [str(err)]
    errors = []
    for position, item in enumerate(listed):
        if not isinstance(item, Mapping):
            errors.append(f"{listed_as}[{position}]: {item!r} is not a mapping")
            continue
        unknown = sorted(str(key) for key in item if key not in FIELDS)
        if unknown:
            errors.append(f"{listed_as}[{position}] ({item.get('name')}): unknown field(s) "
                          f"{', '.join(unknown)}; accepted: {', '.join(FIELDS)}")
        errors += _rollout_field_errors(item, f"{listed_as}[{position}] ({item.get('name')})")
    if errors:
        return errors
    try:
        read = read_deployments([_as_placement_input(item) for item in listed])
    except PlacementError as err:
        return [f"{listed_as}: {str(err).removeprefix('deployments')}".replace(": [", "[", 1)]
    replicas = {deployment.name: deployment.replicas for deployment in read}
    for item in listed:
        name = str(item["name"])
        first, last = replica_names(name, max(replicas[name] - 1, 0))
        # The longest replica name (the last replica's second name) must still name a unit; the preset, environment
        # and key are an instance's.
        sample = _instance(item, max(replicas[name] - 1, 0), name=last)
        sample.pop("placement")
        for problem in instance_errors(sample, presets):
            errors.append(f"deployment {name}: {problem.replace(f'instance {last}', f'replica {first}')}")
    hand = {str(instance.get("name")) for instance in hand_instances if isinstance(instance, Mapping)}
    for name, count in replicas.items():
        taken = sorted(both for index in range(count) for both in replica_names(name, index) if both in hand)
        if taken:
            errors.append(f"deployment {name}: its replica name(s) {', '.join(taken)} are taken by instances of "
                          f"{hand_listed_as} on this host; rename one or the other")
    return errors


def _layered(item: Mapping, presets) -> tuple[dict, str]:
    """A deployment's preset as its replicas run it, without the key (preset_layers.preset_and_key), and the key."""
    return preset_and_key({field: item.get(field) for field in ("name", "preset", "settings")}, presets)


def judge_deployments(deployments, presets) -> tuple[list[dict], dict[str, str]]:
    """What a host's judge needs of each deployment (its layered preset without the key, environment, cards per
    replica, version), and the keys apart (``KEY_PREFIX + name``): checked by deployment_errors first."""
    found, keys = [], {}
    for item in _listed(deployments):
        name = str(item["name"])
        try:
            preset, key = _layered(item, presets)
        except PresetLayerError as err:
            raise PlacementError(f"deployment {name}: {err}") from None
        if key or item.get("api_key"):
            keys[KEY_PREFIX + name] = str(item.get("api_key") or key).strip()
        found.append({"name": name, "preset": preset, "environment": dict(item.get("environment") or {}),
                      "gpus": int(item.get("gpus") or 0), "version": preset_version(preset)})
    return found, keys


def deployment_versions(deployments, presets) -> dict[str, str]:
    """Each deployment's version (preset_layers.preset_version of its layered preset, as judge_deployments gives its
    judges), by name; "" for one these presets cannot layer."""
    versions = {}
    for item in _listed(deployments):
        if isinstance(item, Mapping):
            try:
                versions[str(item.get("name"))] = preset_version(_layered(item, presets)[0])
            except PresetLayerError:
                versions[str(item.get("name"))] = ""
    return versions


def placed_instance(deployment: Mapping, found: PlacedReplica) -> dict:
    """A replica the host's judge found (its record), as the judge's instance item: the deployment's preset with the
    replica's port and cards."""
    preset = dict(deployment["preset"])
    if found.port:
        preset["PORT"] = found.port
    if found.cuda_visible_devices:
        preset["CUDA_VISIBLE_DEVICES"] = found.cuda_visible_devices
    return {"name": found.instance, "preset": preset, "environment": dict(deployment.get("environment") or {}),
            "placement": placement_record(found.as_dict(), found.port, found.cuda_visible_devices)}


# ------------------------------------------------------------------ the controller's placement
def _need(item: Mapping, readings: Mapping[str, HostReading]) -> tuple[int, int, str]:
    """(memory_mib, ram_mib, "") of one deployment's replica: the one given, else the largest estimate of the hosts
    that could plan it; (0, 0, why) when neither is known."""
    if item.get("memory_mib") not in (None, ""):
        return int(item["memory_mib"]), int(item.get("ram_mib") or 0), ""
    name = str(item["name"])
    known, why = [], []
    for host in sorted(readings):
        need = readings[host].estimates.get(name)
        if need is None:
            continue
        if need.memory_mib:
            known.append((need.memory_mib, need.ram_mib))
        elif need.why:
            why.append(f"{host}: {need.why}")
    if known:
        return max(pair[0] for pair in known), max(pair[1] for pair in known), ""
    return 0, 0, ("no host could estimate it (" + ("; ".join(why[:3]) if why else "no host was read") + ")")


def _current_entry(host: str, replica: PlacedReplica) -> dict:
    return {"deployment": replica.deployment, "replica": replica.replica, "host": host,
            "gpus": cards_of(replica.cuda_visible_devices), "memory_mib": replica.memory_mib, "port": replica.port,
            "version": replica.version}


def placement_inputs(deployments, readings: Mapping[str, HostReading], host_fields: Mapping[str, Mapping],
                     versions: Mapping[str, str] | None = None, scope: RunScope | None = None
                     ) -> tuple[list[dict], list[dict], list[dict], list[str], list[str]]:
    """(deployments, hosts, current, errors, notes) for place(), from the deployments, each read host's judge
    reading, the hosts' own fields of place()'s host input (``host_fields``: labels, ram_margin_mib, gpu_margin_mib,
    port_range, from their variables), each deployment's version (``deployment_versions``) and the run's scope
    (``run_scope.RunScope``; None: the read hosts are the whole fleet, all open).

    A read host has its reading's room and replicas; a cordoned one takes nothing new. A frozen host (not changed by
    this run) has the replicas the ledger records, counted as they run, and takes nothing new. A lost host's replicas
    are not counted: they are placed again. A host without a reading and outside the scope is left out. A replica
    found on several hosts (its host was down, the replica was placed again, and the host came back) runs where it
    cannot be removed (a frozen host), else where it runs its plan, else on the first host by name; the other copies
    are removed (notes say so)."""
    listed = _listed(deployments)
    versions = versions or {}
    cordoned = set(scope.cordoned) if scope else set()
    frozen = scope.frozen if scope else {}
    wanted, errors = [], []
    for item in listed:
        memory, ram, why = _need(item, readings)
        if why:
            errors.append(f"deployment {item['name']}: its memory need is unknown: {why}; give it as memory_mib "
                          "(MiB per replica)")
            continue
        wanted.append({**_as_placement_input(item), "memory_mib": memory, "ram_mib": ram,
                       "version": versions.get(str(item["name"]), "")})
    hosts, found = [], {}
    names = {str(item["name"]) for item in listed}
    for host in sorted(readings):
        reading = readings[host]
        capacity = reading.capacity
        # A reading's card has place()'s fields of a card.
        # Every placed replica's port stays taken in this run: a replica whose deployment is gone, or a second copy
        # of one, runs until the removals after the rollout, and the judge leaves the replicas' ports out of its
        # listeners (the placement keeps a kept replica's own).
        ports = sorted(set(capacity.ports_used) | {int(replica.port) for replica in reading.placed if replica.port})
        hosts.append({**(host_fields.get(host) or {}), "name": host, "ram_free_mib": capacity.ram_free_mib,
                      "gpus": [asdict(card) for card in capacity.gpus], "ports_used": ports,
                      "state": CORDONED if host in cordoned else OPEN})
        for replica in reading.placed:
            if replica.deployment in names:  # else its deployment is gone: host_changes removes it
                found.setdefault((replica.deployment, replica.replica), []).append(
                    ((1, not replica.current), _current_entry(host, replica)))
    for host in sorted(frozen):
        if host in readings:
            continue
        hosts.append({**(host_fields.get(host) or {}), "name": host, "ram_free_mib": 0, "gpus": [],
                      "ports_used": [], "state": FROZEN})
        for replica in frozen[host]:
            if replica.deployment in names:
                found.setdefault((replica.deployment, replica.replica), []).append(
                    ((0, False), _current_entry(host, replica)))
    current, notes = [], []
    for (deployment, number), copies in sorted(found.items()):
        copies.sort(key=lambda pair: (pair[0], pair[1]["host"]))
        current.append(copies[0][1])
        if len(copies) > 1:
            others = ", ".join(entry["host"] for _rank, entry in copies[1:])
            notes.append(f"{replica_name(deployment, number)} runs on {copies[0][1]['host']} and on {others}: it "
                         f"stays on {copies[0][1]['host']}, the others are removed")
    return wanted, hosts, current, errors, notes


def renewals(readings: Mapping[str, HostReading], current: Sequence[Mapping], surge: Mapping[str, int],
             cordoned: Sequence[str] = ()) -> list[dict]:
    """The running replicas that start a new copy first (place()'s ``renew``): of each deployment, up to
    ``surge[deployment]`` of those whose host this run reads, that do not run their plan (their rollout would
    restart them), lowest numbers first. A replica on a cordoned host moves anyway: it is no renewal."""
    counted = {(entry["deployment"], entry["replica"]): entry["host"] for entry in current}
    chosen: dict[str, list[int]] = {}
    for host in sorted(readings):
        if host in cordoned:
            continue
        for replica in readings[host].placed:
            key = (replica.deployment, replica.replica)
            if not replica.current and counted.get(key) == host:
                chosen.setdefault(replica.deployment, []).append(replica.replica)
    return [{"deployment": name, "replica": number} for name in sorted(chosen)
            for number in sorted(set(chosen[name]))[:max(int(surge.get(name, 0)), 0)]]


def lost_replicas(scope: RunScope | None, result: Mapping) -> list[dict]:
    """The replicas of the unreachable hosts that this run places again (``run_scope.REPLACE``), each with where it
    runs now (``placed_on``: a host, or "" when it found no room: the deployment runs short)."""
    if not scope:
        return []
    where = {(entry["deployment"], entry["replica"]): entry["host"] for entry in result.get("placements") or []}
    found = []
    for host in sorted(scope.lost):
        for replica in scope.lost[host]:
            placed_on = where.get((replica.deployment, replica.replica), "")
            found.append({"deployment": replica.deployment, "replica": replica.replica, "host": host,
                          "placed_on": "" if placed_on == host else placed_on})
    return found


def cards_of(cuda_visible_devices: str) -> list[str]:
    text = str(cuda_visible_devices or "").strip()
    return [] if text in ("", NO_CARD) else [part.strip() for part in text.split(",") if part.strip()]


def host_changes(result: Mapping, readings: Mapping[str, HostReading]) -> dict[str, dict]:
    """Each read host's share of the placement: ``instances`` (the replicas it runs after the rollout: name,
    deployment, replica, port, cuda_visible_devices), ``remove`` (the placed replicas it runs now and no longer
    keeps: moved away, or their deployment or replica number is gone), ``moved_to`` (of those, the ones with a new
    copy: ``removal_homes``' entry, by name) and ``changed`` (either list differs from what it runs)."""
    shares: dict[str, dict] = {}
    homes = removal_homes(result)
    by_host: dict[str, list] = {}  # one pass over the placements, not one per host (a fleet's size squared)
    for placement in result.get("placements") or []:
        by_host.setdefault(placement["host"], []).append(placement)
    for host in sorted(readings):
        reading = readings[host]
        has_cards = bool(reading.capacity.gpus)
        mine = []
        for placement in by_host.get(host, ()):
            cards = ",".join(placement["gpus"]) if placement["gpus"] else (NO_CARD if has_cards else "")
            name = placement.get("instance") or replica_name(placement["deployment"], placement["replica"])
            mine.append({"name": name,
                         "deployment": placement["deployment"], "replica": placement["replica"],
                         "port": placement["port"], "cuda_visible_devices": cards})
        runs = {replica.instance: replica for replica in reading.placed}
        keep = {entry["name"] for entry in mine}
        remove = sorted(name for name in runs if name not in keep)
        same = all(entry["name"] in runs and runs[entry["name"]].port == entry["port"]
                   and runs[entry["name"]].cuda_visible_devices == entry["cuda_visible_devices"]
                   and runs[entry["name"]].current for entry in mine)
        shares[host] = {"instances": mine, "remove": remove,
                        "moved_to": {name: homes[name] for name in remove if name in homes},
                        "changed": bool(remove) or not same}
    return shares


def name_placements(result: Mapping, readings: Mapping[str, HostReading]) -> None:
    """Each placement's instance name (``instance``), in place: a replica that stays keeps the name it runs under; a
    start-first copy (``renews``) takes the name its running copy does not have when it starts beside it, else the
    replica's first name, and ``renews`` names the running copy (``instance``); a new or moved one, its first
    name."""
    # Of two copies on one host (a renewal cut short), the one that runs its plan speaks: it comes last.
    running = {(host, replica.deployment, replica.replica): replica.instance
               for host in readings for replica in sorted(readings[host].placed, key=lambda found: found.current)}
    for placement in result.get("placements") or []:
        deployment, number, host = placement["deployment"], placement["replica"], placement["host"]
        renews = placement.get("renews")
        if renews:
            old = running.get((renews["host"], deployment, number), replica_name(deployment, number))
            renews["instance"] = old
            placement["instance"] = (copy_name(deployment, number, old) if renews["host"] == host
                                     else replica_name(deployment, number))
        else:
            placement["instance"] = running.get((host, deployment, number), replica_name(deployment, number))


def placed_instances(share: Sequence[Mapping], deployments) -> list[dict]:
    """A host's placed replicas (``host_changes``' ``instances``) as instances of the role, with their deployment's
    preset, settings, environment and key."""
    by_name = {str(item["name"]): item for item in _listed(deployments) if isinstance(item, Mapping)}
    return [_instance(by_name[entry["deployment"]], int(entry["replica"]), port=int(entry["port"]),
                      cards=str(entry.get("cuda_visible_devices") or ""), name=str(entry.get("name") or ""))
            for entry in share if entry.get("deployment") in by_name]


def removal_homes(result: Mapping) -> dict[str, dict]:
    """Where each placed replica runs once the rollout is done, by the name of the copy it replaces (a start-first
    copy (surge) replaces the running copy it names; any other placement, the copy of its name): the new copy's
    ``host`` and ``instance``, and whether that host is ``frozen`` (kept as it is by this run)."""
    frozen = set(result.get("frozen") or [])
    homes = {}
    for placement in result.get("placements") or []:
        instance = placement.get("instance") or replica_name(placement["deployment"], placement["replica"])
        replaced = (placement.get("renews") or {}).get("instance") or instance
        homes[replaced] = {"host": placement["host"], "instance": instance, "frozen": placement["host"] in frozen}
    return homes


def removable(names: Sequence[str], result: Mapping, reports: Mapping[str, Sequence[Mapping]]) -> list[str]:
    """Of a host's replicas to remove, those that may go now: one that moved goes once its new host's report says
    it is deployed and runs its plan (started before it is removed), or at once when its other copy is on a host
    this run keeps as it is (``result["frozen"]``); one whose deployment or number is gone goes at once. ``result``:
    the placement, or the host's share of it (``host_changes``: its ``moved_to`` names the new homes it needs)."""
    homes = result["moved_to"] if "moved_to" in result else removal_homes(result)
    gone = []
    for name in names:
        home = homes.get(name)
        # A copy kept on a frozen host runs there (the ledger says so), and this run cannot touch that host.
        if home is None or home["frozen"]:
            gone.append(name)
            continue
        rows = [row for row in reports.get(home["host"]) or [] if isinstance(row, Mapping)
                and row.get("instance") == home["instance"]]
        if rows and rows[-1].get("state") == "deployed" and rows[-1].get("runs_plan"):
            gone.append(name)
    return gone


def summary_rows(result: Mapping, lost: Sequence[Mapping] = ()) -> list[dict]:
    """One row per deployment: its replicas placed (host, cards, port), left out (no room in this run: the
    deployment runs short), and lost (on an unreachable host: ``lost_replicas``, with where each was placed
    again)."""
    rows: dict[str, dict] = {}

    def row_of(name: str) -> dict:
        return rows.setdefault(name, {"deployment": name, "replicas": [], "unplaced": [], "lost": []})

    for placement in result.get("placements") or []:
        row = row_of(placement["deployment"])
        # The instance it runs as: a start-first copy beside its running copy has the replica's second name.
        instance = placement.get("instance") or replica_name(placement["deployment"], placement["replica"])
        row["replicas"].append({"replica": placement["replica"], "host": placement["host"], "instance": instance,
                                "gpus": list(placement["gpus"]), "port": placement["port"],
                                "memory_mib": placement["memory_mib"]})
    for unplaced in result.get("unplaced") or []:
        row_of(unplaced["deployment"])["unplaced"].append({"replica": unplaced["replica"], "why": unplaced["why"]})
    for entry in lost:
        row_of(entry["deployment"])["lost"].append({"replica": entry["replica"], "host": entry["host"],
                                                    "placed_on": entry["placed_on"]})
    return [rows[name] for name in sorted(rows)]
