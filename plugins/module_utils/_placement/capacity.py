# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each host and card still has room for while a placement is built, and where one replica fits best.

Pure. A host's room is its free RAM less its margin; a card's, its free memory less the card margin (what
llama.cpp's --fit-target keeps). A GPU replica of ``gpus`` cards needs ``ceil(memory_mib / gpus)`` on each of them
(llama.cpp spreads the layers by the cards' free memory) and ``ram_mib`` of host RAM; a CPU replica needs
``memory_mib`` of RAM. Every change can be taken back (the search walks and backtracks).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Deployment, Host


@dataclass(frozen=True)
class Choice:
    """Where one replica goes: the host, its cards (UUIDs, in index order) and what it takes there."""

    host: str
    cards: tuple[str, ...]
    ram_mib: int
    per_card_mib: int
    score: tuple  # lower is better, for the deployment's policy


class Capacity:
    """Room left per host and card, with sorted indexes for the first pass: for each group of hosts a deployment
    may use and each card count, the hosts by the room of their k-th roomiest card (by free RAM for k = 0), so a
    replica finds its host by bisection instead of a scan of the fleet."""

    def __init__(self, hosts: Iterable[Host]):
        self.hosts = {host.name: host for host in hosts}
        self.ram = {name: host.ram_free_mib - host.ram_margin_mib for name, host in self.hosts.items()}
        self.card_room = {name: {card.uuid: card.free_mib - host.gpu_margin_mib for card in host.cards}
                          for name, host in self.hosts.items()}
        self.card_index = {name: {card.uuid: card.index for card in host.cards} for name, host in self.hosts.items()}
        # Each host's cards by room, smallest first: a fit is a bisection, not a scan.
        self.ascending = {name: sorted((room, self.card_index[name][uuid], uuid) for uuid, room in rooms.items())
                          for name, rooms in self.card_room.items()}
        self._indexes: dict[tuple, list[tuple[int, str]]] = {}  # (hosts, k) -> [(room, host)] ascending
        self._rows: dict[tuple, dict[str, tuple[int, str]]] = {}  # (hosts, k) -> host -> its row
        self._member_of: dict[str, list[tuple]] = {name: [] for name in self.hosts}

    # ------------------------------------------------------------------ the first pass's indexes
    def _shape_room(self, host: str, count: int) -> int:
        if count == 0:
            return self.ram[host]
        rows = self.ascending[host]
        return rows[-count][0] if len(rows) >= count else -1

    def index(self, hosts: tuple[str, ...], count: int) -> list[tuple[int, str]]:
        """The hosts of ``hosts`` by their room for a replica of ``count`` cards, ascending (built once)."""
        key = (hosts, count)
        if key not in self._indexes:
            rows = {host: (self._shape_room(host, count), host) for host in hosts}
            self._indexes[key] = sorted(rows.values())
            self._rows[key] = rows
            for host in hosts:
                self._member_of[host].append(key)
        return self._indexes[key]

    def _reindex(self, host: str) -> None:
        for key in self._member_of[host]:
            rows, old = self._indexes[key], self._rows[key][host]
            new = (self._shape_room(host, key[1]), host)
            if new != old:
                rows.pop(bisect.bisect_left(rows, old))
                bisect.insort(rows, new)
                self._rows[key][host] = new

    def first_fit(self, deployment: Deployment, hosts: tuple[str, ...], taken: set[str],
                  tightest: bool = False) -> tuple[Choice | None, int]:
        """The first pass's host for one replica, and how many hosts had room for it. spread: the host with the most
        room for its shape, among those that run none of its replicas (``taken``); binpack (or ``tightest``): the
        least room that still fits."""
        rows = self.index(hosts, deployment.gpus)
        need = deployment.per_card_mib if deployment.gpus else deployment.memory_mib
        start = bisect.bisect_left(rows, (need, ""))
        candidates = len(rows) - start
        tightest = tightest or deployment.policy == "binpack"
        walk = range(start, len(rows)) if tightest else range(len(rows) - 1, start - 1, -1)
        for position in walk:
            host = rows[position][1]
            if deployment.policy == "spread" and host in taken:
                continue
            choice = self.best_on(deployment, host, tightest)
            if choice is not None:
                return choice, candidates
        return None, candidates

    # ------------------------------------------------------------------ changes (and their undo)
    def _set_card(self, host: str, uuid: str, room: int) -> None:
        rows = self.ascending[host]
        old = self.card_room[host][uuid]
        rows.pop(bisect.bisect_left(rows, (old, self.card_index[host][uuid], uuid)))
        bisect.insort(rows, (room, self.card_index[host][uuid], uuid))
        self.card_room[host][uuid] = room

    def take(self, choice: Choice) -> None:
        self.ram[choice.host] -= choice.ram_mib
        for uuid in choice.cards:
            self._set_card(choice.host, uuid, self.card_room[choice.host][uuid] - choice.per_card_mib)
        self._reindex(choice.host)

    def give_back(self, choice: Choice) -> None:
        self.ram[choice.host] += choice.ram_mib
        for uuid in choice.cards:
            self._set_card(choice.host, uuid, self.card_room[choice.host][uuid] + choice.per_card_mib)
        self._reindex(choice.host)

    def hold(self, host: str, ram_mib: int, cards: dict[str, int]) -> None:
        """Count memory a running replica holds (and keeps) as room again: it is in the free figures already."""
        self.ram[host] += ram_mib
        for uuid, mib in cards.items():
            self._set_card(host, uuid, self.card_room[host][uuid] + mib)
        self._reindex(host)

    # ------------------------------------------------------------------ where a replica fits
    def best_on(self, deployment: Deployment, host: str, tightest: bool = False) -> Choice | None:
        """The replica's best cards on this host for its policy (``tightest``: the tightest whatever the policy), or
        None when it does not fit."""
        tightest = tightest or deployment.policy == "binpack"
        if deployment.gpus == 0:
            room = self.ram[host] - deployment.memory_mib
            if room < 0:
                return None
            return Choice(host, (), deployment.memory_mib, 0, _score(deployment.policy, room, host))
        if self.ram[host] < deployment.ram_mib:
            return None
        need, count = deployment.per_card_mib, deployment.gpus
        rows = self.ascending[host]
        start = bisect.bisect_left(rows, (need, -1, ""))
        if len(rows) - start < count:
            return None
        # binpack: the tightest cards that fit; spread: the roomiest.
        chosen = rows[start:start + count] if tightest else rows[-count:]
        left = sum(room for room, _index, _uuid in chosen) - need * count
        if not tightest:
            left = sum(room for room, _index, _uuid in rows) - need * count
        cards = tuple(uuid for _room, _index, uuid in sorted(chosen, key=lambda row: row[1]))
        return Choice(host, cards, deployment.ram_mib, need, _score(deployment.policy, left, host))

    def options_on(self, deployment: Deployment, host: str) -> list[Choice]:
        """Every distinct way the replica fits on this host (cards of equal room are one way), best first."""
        if deployment.gpus == 0 or deployment.gpus == len(self.ascending[host]):
            best = self.best_on(deployment, host)
            return [best] if best else []
        if self.ram[host] < deployment.ram_mib:
            return []
        need, count = deployment.per_card_mib, deployment.gpus
        rows = [row for row in self.ascending[host] if row[0] >= need]
        found: dict[tuple[int, ...], Choice] = {}
        for combo in _combinations(rows, count):
            rooms = tuple(row[0] for row in combo)
            if rooms in found:
                continue
            left = sum(rooms) - need * count
            cards = tuple(uuid for _room, _index, uuid in sorted(combo, key=lambda row: row[1]))
            found[rooms] = Choice(host, cards, deployment.ram_mib, need, _score(deployment.policy, left, host))
        return sorted(found.values(), key=lambda choice: choice.score)

    def describe(self, deployment: Deployment, host: str) -> str:
        """What this host offers the replica, for a refusal: its room for RAM, or its roomiest cards."""
        if deployment.gpus == 0:
            return f"{max(self.ram[host], 0)} MiB of RAM free after its margin"
        rooms = [max(room, 0) for room, _index, _uuid in reversed(self.ascending[host])][:deployment.gpus]
        if not rooms:
            return "no card"
        text = f"{len(rooms)} card(s) with {'/'.join(map(str, rooms))} MiB free after the margin"
        return text + (f" and {max(self.ram[host], 0)} MiB of RAM" if deployment.ram_mib else "")

    def offer(self, deployment: Deployment, host: str) -> int:
        """How close the host comes to the replica's need (for naming the best candidate): its room for it."""
        if deployment.gpus == 0:
            return self.ram[host]
        rows = self.ascending[host]
        return rows[-deployment.gpus][0] if len(rows) >= deployment.gpus else -1


def _score(policy: str, left: int, host: str) -> tuple:
    # binpack: the least room left (the tightest fit); spread: the most (the least loaded host). Then by name.
    return (left if policy == "binpack" else -left, host)


def _combinations(rows: list, count: int):
    if count == 0:
        yield ()
        return
    for position in range(len(rows) - count + 1):
        for rest in _combinations(rows[position + 1:], count - 1):
            yield (rows[position], *rest)
