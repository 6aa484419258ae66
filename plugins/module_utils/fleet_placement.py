# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Public façade of the fleet placement: what to serve, and the fleet's free memory -> where each replica runs.

Pure and part of the collection's contract, like ``planner.plan`` (docs/placement.md): plain JSON-able data in and
out, the same output for the same input in any order.

    place(deployments, hosts, current=None) -> {"placements": [...], "unplaced": [...], "notes": [...]}

- Nothing is over-committed: no card and no host's RAM is given more than it has free, less its margin.
- A replica that runs now (``current``) stays where it is while its host still has it, still carries the labels
  it needs, and still has room for its need; memory a moving or removed replica holds is not given to another one
  in the same placement (it is freed only once that replica is gone, by the next run).
- The rest are placed hardest first by each deployment's policy (``spread``: distinct hosts, the least loaded
  first; ``binpack``: the tightest fit); when that leaves one out, a bounded exact search finds a placement with the
  fewest left out (every one, whenever one exists, on a fleet small enough for the search to finish).
- Each placement says why it went there, each unplaced replica what it needs and what the best candidate had.
- Each placed replica gets a port of its host's range that no hand-placed instance or foreign listener uses.
- A host's ``state`` says what the placement may do there: ``open`` (the default) takes replicas; ``frozen`` (a
  host this run cannot change: outside ``--limit``, or unreachable and kept) keeps what it runs, counted as it runs
  whatever its room, and takes nothing new; ``cordoned`` takes nothing new, and what it runs moves elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.capacity import Capacity, Choice
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import (
    CORDONED,
    FROZEN,
    OPEN,
    Current,
    Deployment,
    Host,
    PlacementError,
    read_current,
    read_deployments,
    read_hosts,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.search import DEFAULT_STEP_BUDGET, solve

__all__ = ["PlacementError", "place"]


def _keep(current: Current, deployment: Deployment | None, capacity: Capacity) -> tuple[Choice | None, str]:
    """The choice that keeps a running replica where it is, or why it cannot stay."""
    if deployment is None:
        return None, f"its deployment {current.deployment} is no longer listed"
    if current.replica >= deployment.replicas:
        return None, f"{deployment.name} has {deployment.replicas} replica(s) now"
    host = capacity.hosts.get(current.host)
    if host is None:
        return None, f"{current.host} is no longer a host of the fleet"
    if host.state == CORDONED:
        return None, f"{current.host} is cordoned"
    if host.state == FROZEN:
        # Nothing this run does reaches that host: the replica is counted where it runs, as it runs.
        return Choice(current.host, tuple(current.gpus), 0, 0, ()), ""
    if not host.matches(deployment.labels):
        return None, f"{current.host} no longer has the labels it needs ({deployment.labels_text()})"
    known = {card.uuid for card in host.cards}
    if len(current.gpus) != deployment.gpus or not set(current.gpus) <= known:
        return None, (f"it runs on {len(current.gpus)} card(s) of {current.host}, and needs {deployment.gpus} "
                      "card(s) there now")
    held_per_card = -(-current.memory_mib // len(current.gpus)) if current.gpus else 0
    held_ram = 0 if current.gpus else current.memory_mib
    capacity.hold(current.host, held_ram, dict.fromkeys(current.gpus, held_per_card))
    need_ram = deployment.ram_mib if deployment.gpus else deployment.memory_mib
    rooms = [capacity.card_room[current.host][uuid] for uuid in current.gpus]
    if capacity.ram[current.host] >= need_ram and all(room >= deployment.per_card_mib for room in rooms):
        cards = tuple(sorted(current.gpus, key=lambda uuid: capacity.card_index[current.host][uuid]))
        choice = Choice(current.host, cards, need_ram, deployment.per_card_mib, ())
        # What it holds was counted as room for it: its need is taken from that room, so that no other replica of
        # this placement is given the same memory.
        capacity.take(choice)
        return choice, ""
    capacity.hold(current.host, -held_ram, dict.fromkeys(current.gpus, -held_per_card))
    return None, f"{current.host} no longer has room for its need of {deployment.memory_mib} MiB"


def _need_text(deployment: Deployment) -> str:
    if deployment.gpus == 0:
        return f"{deployment.memory_mib} MiB of RAM"
    text = f"{deployment.gpus} card(s) with {deployment.per_card_mib} MiB free each"
    return text + (f" and {deployment.ram_mib} MiB of RAM" if deployment.ram_mib else "")


def _placed_why(deployment: Deployment, choice: Choice, capacity: Capacity, candidates: int | None) -> str:
    where = (f", on cards {', '.join(str(capacity.card_index[choice.host][uuid]) for uuid in choice.cards)}"
             if choice.cards else "")
    where = where.replace(", on cards ", ", on card ", 1) if len(choice.cards) == 1 else where
    if candidates is None:
        how = "the search that places the most replicas put it here"
    elif deployment.policy == "spread":
        how = f"spread: the most room of the {candidates} host(s) with room for it"
    else:
        how = f"binpack: the tightest fit of the {candidates} host(s) with room for it"
    return f"{how}; needs {_need_text(deployment)}{where}"


def _unplaced_why(deployment: Deployment, eligible: Sequence[str], capacity: Capacity, occupied: set[str]) -> str:
    need = f"needs {_need_text(deployment)}"
    if not eligible:
        closed = sorted(name for name, host in capacity.hosts.items()
                        if host.state != OPEN and host.matches(deployment.labels))
        if closed:
            return (f"{need} on a host labelled {deployment.labels_text()}: the only ones, {', '.join(closed[:5])}"
                    f"{' ...' if len(closed) > 5 else ''}, take no new replica in this run (cordoned, or not in it)")
        return f"{need} on a host labelled {deployment.labels_text()}: no host has these labels"
    open_hosts = [host for host in eligible if deployment.policy != "spread" or host not in occupied]
    if not open_hosts:
        best = max(eligible, key=lambda host: (capacity.offer(deployment, host), host))
        return (f"{need}; spread: each of the {len(eligible)} host(s) with its labels already runs one of its "
                f"replicas (the best of them, {best}, has {capacity.describe(deployment, best)})")
    best = max(open_hosts, key=lambda host: (capacity.offer(deployment, host), host))
    return f"{need}; the best candidate, {best}, has {capacity.describe(deployment, best)}"


def _ports(placements: list[dict], hosts: Mapping[str, Host], current: Sequence[Current]) -> list[dict]:
    """A port per placement; returns the placements that found none (they become unplaced)."""
    reserved = {name: set(host.ports_used) for name, host in hosts.items()}
    for running in current:
        if running.port and running.host in reserved:
            reserved[running.host].add(running.port)  # held until that replica is gone, kept or not
    failed = []
    for placement in placements:
        if placement.get("port"):
            continue
        host = hosts[placement["host"]]
        first, last = host.port_range
        port = next((port for port in range(first, last + 1) if port not in reserved[host.name]), 0)
        if not port:
            failed.append(placement)
            continue
        reserved[host.name].add(port)
        placement["port"] = port
    return failed


def place(deployments: list[dict], hosts: list[dict], current: list[dict] | None = None, *,
          renew: list[dict] | None = None, step_budget: int = DEFAULT_STEP_BUDGET) -> dict:
    """Place every replica of ``deployments`` on ``hosts`` (docs/placement.md has each field). ``renew``: running
    replicas (``deployment``, ``replica``) that start a new copy first where there is room (surge). Raises
    PlacementError naming the field of an input it cannot read."""
    wanted = {deployment.name: deployment for deployment in read_deployments(deployments)}
    fleet = read_hosts(hosts)
    running = read_current(current)
    capacity = Capacity(fleet)

    kept, moving = _kept_and_moving(running, wanted, capacity)
    occupied: dict[str, set[str]] = {}
    for (name, _index), (choice, _replica) in kept.items():
        occupied.setdefault(name, set()).add(choice.host)

    eligible = {name: tuple(host.name for host in fleet if host.state == OPEN and host.matches(deployment.labels))
                for name, deployment in wanted.items()}
    to_place = [(name, index) for name, deployment in wanted.items() for index in range(deployment.replicas)
                if (name, index) not in kept]
    outcome = solve(wanted, to_place, eligible, capacity, occupied, budget=step_budget)
    # Copies come last: a replica to place never loses its room to one.
    renewing = _renewals(_renew_keys(renew), kept, wanted, eligible, capacity=capacity, occupied=occupied)

    placements = []
    for (name, index), (choice, replica, candidates) in sorted(renewing.items()):
        deployment = wanted[name]
        placements.append({"deployment": name, "replica": index, "host": choice.host, "gpus": list(choice.cards),
                           "memory_mib": deployment.memory_mib, "port": 0,
                           "renews": {"host": replica.host, "port": replica.port},
                           "why": (f"a new copy starts first ({_placed_why(deployment, choice, capacity, candidates)}"
                                   f"); the copy on {replica.host} goes once it serves")})
    for (name, index), (choice, replica) in sorted(kept.items()):
        if (name, index) in renewing:
            continue
        deployment = wanted[name]
        placements.append({"deployment": name, "replica": index, "host": choice.host, "gpus": list(choice.cards),
                           "memory_mib": deployment.memory_mib, "port": replica.port,
                           "why": f"runs there now and still has room for its need of {_need_text(deployment)}"})
    for (name, index), choice in sorted(outcome.choices.items()):
        deployment = wanted[name]
        entry = {"deployment": name, "replica": index, "host": choice.host, "gpus": list(choice.cards),
                 "memory_mib": deployment.memory_mib, "port": 0,
                 "why": _placed_why(deployment, choice, capacity, outcome.first_pass.get((name, index)))}
        if (name, index) in moving:
            old, why = moving[(name, index)]
            entry["moved_from"] = old.host
            entry["why"] += f"; moved from {old.host}: {why}"
        placements.append(entry)
    by_name = {host.name: host for host in fleet}
    no_port = _ports(placements, by_name, running)

    unplaced = []
    for name, index in sorted(set(to_place) - set(outcome.choices)):
        deployment = wanted[name]
        unplaced.append({"deployment": name, "replica": index,
                         "why": _unplaced_why(deployment, eligible[name], capacity, occupied.get(name, set()))})
    for placement in no_port:
        placements.remove(placement)
        first, last = by_name[placement["host"]].port_range
        unplaced.append({"deployment": placement["deployment"], "replica": placement["replica"],
                         "why": f"{placement['host']} has no free port from {first} to {last}"})
    unplaced.sort(key=lambda entry: (entry["deployment"], entry["replica"]))
    placements.sort(key=lambda entry: (entry["deployment"], entry["replica"]))

    notes = _notes(wanted, kept, moving, outcome, len(unplaced))
    if renewing:
        notes.append({"id": "placement.surge", "text": f"{len(renewing)} replica(s) start a new copy first, then "
                                                       "their running copy goes"})
    return {"placements": placements, "unplaced": unplaced, "notes": notes}


def _renew_keys(renew) -> set[tuple[str, int]]:
    if renew is None:
        return set()
    if not isinstance(renew, Sequence) or isinstance(renew, str):
        raise PlacementError(f"renew: {type(renew).__name__} is not a list of replicas (deployment, replica)")
    keys = set()
    for position, item in enumerate(renew):
        if not isinstance(item, Mapping) or not isinstance(item.get("deployment"), str) \
                or isinstance(item.get("replica"), bool) or not isinstance(item.get("replica"), int):
            raise PlacementError(f"renew[{position}]: {item!r} is not a replica (deployment, replica)")
        keys.add((item["deployment"], item["replica"]))
    return keys


def _renewals(keys, kept, wanted, eligible, *, capacity: Capacity, occupied: dict[str, set[str]]) -> dict:
    """A start-first copy of each running replica of ``keys`` that stays: placed where there is room now, its own
    host or another, while the running copy still holds its memory (it goes only once the new one serves). spread
    keeps a copy off the hosts of the deployment's other replicas. A replica with no room for a copy gets none: it
    restarts where it runs. {key: (choice, running replica, hosts with room)}."""
    chosen = {}
    for key in sorted(keys):
        if key not in kept:
            continue
        name = key[0]
        running = kept[key][1]
        others = occupied.get(name, set()) - {running.host}
        choice, candidates = capacity.first_fit(wanted[name], eligible[name], others)
        if choice is None:
            continue
        capacity.take(choice)
        occupied.setdefault(name, set()).add(choice.host)
        chosen[key] = (choice, running, candidates)
    return chosen


def _kept_and_moving(running, wanted, capacity) -> tuple[dict, dict]:
    """The running replicas that stay (with their choice), and those that move or go (with why)."""
    kept: dict[tuple[str, int], tuple[Choice, Current]] = {}
    moving: dict[tuple[str, int], tuple[Current, str]] = {}
    for replica in running:
        choice, why = _keep(replica, wanted.get(replica.deployment), capacity)
        if choice is None:
            moving[(replica.deployment, replica.replica)] = (replica, why)
        else:
            kept[(replica.deployment, replica.replica)] = (choice, replica)
    return kept, moving


def _notes(wanted, kept, moving, outcome, unplaced: int) -> list[dict]:
    notes = []
    if kept:
        notes.append({"id": "placement.kept", "text": f"{len(kept)} replica(s) stay where they run"})
    for (name, index), (old, why) in sorted(moving.items()):
        gone = name not in wanted or index >= wanted[name].replicas
        notes.append({"id": "placement.removed" if gone else "placement.moves",
                      "text": f"{name}/{index} on {old.host} " + ("goes" if gone else "moves") + f": {why}"})
    if outcome.searched:
        notes.append({"id": "placement.search",
                      "text": (f"the first pass left replicas out; the search took {outcome.steps} step(s) and "
                               + ("found the placement that leaves out the fewest" if outcome.finished else
                                  "stopped at its budget: a better placement may exist"))})
    if unplaced:
        notes.append({"id": "placement.unplaced", "text": f"{unplaced} replica(s) have no room in the fleet"})
    return notes
