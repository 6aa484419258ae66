# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The placement's inputs, read and checked: deployments, hosts and the placements that run now.

Pure. Plain JSON-able mappings come in (fleet_placement.place's contract); typed, frozen records go out, or a
PlacementError naming the field, the value and the accepted form. Everything is sorted by name here, so the same
input in another order gives the same placement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

POLICIES = ("spread", "binpack")
# A host's part in a placement: open (takes replicas), frozen (this run cannot change it: what it runs stays, counted
# as it runs, and it takes nothing new), cordoned (it takes nothing new, and what it runs moves elsewhere).
OPEN, FROZEN, CORDONED = "open", "frozen", "cordoned"
HOST_STATES = (OPEN, FROZEN, CORDONED)
# What a card keeps free beyond the placement's needs: llama.cpp's own --fit-target default (1024 MiB).
DEFAULT_GPU_MARGIN_MIB = 1024
# What a host's RAM keeps free for the system, the page cache of mmapped weights' misses and the engine's own heap.
DEFAULT_RAM_MARGIN_MIB = 1024
DEFAULT_PORT_RANGE = (8080, 8179)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_LABEL_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]{0,62}")
MAX_MIB = 1 << 40  # a petabyte: anything above is a unit mistake


class PlacementError(ValueError):
    """An input the placement cannot read, naming where it is."""


@dataclass(frozen=True)
class Deployment:
    name: str
    replicas: int
    memory_mib: int  # per replica: RAM for a CPU replica, spread evenly over its cards for a GPU one
    gpus: int  # cards per replica; 0 = the host's RAM
    labels: tuple[tuple[str, str | None], ...]  # required: (key, value), value None = any value
    policy: str
    ram_mib: int = 0  # host RAM a GPU replica needs besides its cards
    version: str = ""  # what it runs (a preset version); a current replica of another version still stays

    @property
    def per_card_mib(self) -> int:
        return -(-self.memory_mib // self.gpus) if self.gpus else 0

    def labels_text(self) -> str:
        return ", ".join(key if value is None else f"{key}={value}" for key, value in self.labels) or "none"


@dataclass(frozen=True)
class Card:
    uuid: str
    index: int
    total_mib: int
    free_mib: int


@dataclass(frozen=True)
class Host:
    name: str
    labels: tuple[tuple[str, str], ...]
    ram_free_mib: int
    cards: tuple[Card, ...]
    gpu_margin_mib: int = DEFAULT_GPU_MARGIN_MIB
    ram_margin_mib: int = DEFAULT_RAM_MARGIN_MIB
    ports_used: frozenset[int] = frozenset()
    port_range: tuple[int, int] = DEFAULT_PORT_RANGE
    state: str = OPEN

    def matches(self, required: Sequence[tuple[str, str | None]]) -> bool:
        mine = dict(self.labels)
        return all(key in mine and (value is None or mine[key] == value) for key, value in required)


@dataclass(frozen=True)
class Current:
    deployment: str
    replica: int
    host: str
    gpus: tuple[str, ...]
    memory_mib: int
    port: int = 0
    version: str = ""


def _is_list(value) -> bool:
    """A list (or tuple) of the input, and not text, which is a sequence too."""
    return isinstance(value, Sequence) and not isinstance(value, str)


def _where(kind: str, position: int, name: str = "") -> str:
    return f"{kind}[{position}]" + (f" ({name})" if name else "")


def _integer(where: str, field: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise PlacementError(f"{where}.{field}: {value!r} is not an integer from {low} to {high}")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise PlacementError(f"{where}.{field}: {value!r} is not an integer from {low} to {high}") from None
    if not low <= number <= high:
        raise PlacementError(f"{where}.{field}: {value!r} is not an integer from {low} to {high}")
    return number


def _name(where: str, field: str, value) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise PlacementError(f"{where}.{field}: {value!r} is not a name (letters, digits, _ . -; a letter or digit "
                             "first; at most 63 characters)")
    return value


def _labels(where: str, value, required: bool) -> tuple[tuple[str, str | None], ...]:
    """A mapping of key to value, or a list of ``key=value`` (or bare ``key``: for a requirement, any value)."""
    if value is None:
        return ()
    pairs: list[tuple[str, str | None]] = []
    if isinstance(value, Mapping):
        items = [(str(key), None if val is None else str(val)) for key, val in value.items()]
    elif _is_list(value):
        items = []
        for word in value:
            if not isinstance(word, str):
                raise PlacementError(f"{where}.labels: {word!r} is not key=value text")
            key, equals, val = word.partition("=")
            items.append((key, val if equals else None))
    else:
        raise PlacementError(f"{where}.labels: {value!r} is not a mapping of label to value, or a list of key=value")
    for key, val in items:
        if not _LABEL_KEY.fullmatch(key):
            raise PlacementError(f"{where}.labels: {key!r} is not a label name (letters, digits, _ . / -)")
        pairs.append((key, "" if val is None and not required else val))
    return tuple(sorted(set(pairs), key=lambda pair: (pair[0], pair[1] or "")))


def read_deployments(raw) -> tuple[Deployment, ...]:
    if not _is_list(raw):
        raise PlacementError(f"deployments: {type(raw).__name__} is not a list of deployments")
    found: dict[str, Deployment] = {}
    for position, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise PlacementError(f"{_where('deployments', position)}: {item!r} is not a mapping")
        where = _where("deployments", position)
        name = _name(where, "name", item.get("name"))
        where = _where("deployments", position, name)
        if name in found:
            raise PlacementError(f"{where}.name: {name!r} is listed twice")
        policy = item.get("policy") or "spread"
        if policy not in POLICIES:
            raise PlacementError(f"{where}.policy: {policy!r} is not one of {', '.join(POLICIES)}")
        found[name] = Deployment(
            name=name,
            replicas=_integer(where, "replicas", item.get("replicas", 1), 0, 10000),
            memory_mib=_integer(where, "memory_mib", item.get("memory_mib"), 1, MAX_MIB),
            gpus=_integer(where, "gpus", item.get("gpus", 0), 0, 64),
            labels=_labels(where, item.get("labels"), required=True),
            policy=policy,
            ram_mib=_integer(where, "ram_mib", item.get("ram_mib", 0), 0, MAX_MIB),
            version=str(item.get("version") or ""),
        )
    return tuple(found[name] for name in sorted(found))


def _cards(where: str, raw) -> tuple[Card, ...]:
    if raw is None:
        return ()
    if not _is_list(raw):
        raise PlacementError(f"{where}.gpus: {raw!r} is not a list of cards")
    cards, seen = [], set()
    for position, item in enumerate(raw):
        card_where = f"{where}.gpus[{position}]"
        if not isinstance(item, Mapping):
            raise PlacementError(f"{card_where}: {item!r} is not a mapping")
        uuid = item.get("uuid")
        if not isinstance(uuid, str) or not uuid.strip() or uuid in seen:
            raise PlacementError(f"{card_where}.uuid: {uuid!r} is not a card's UUID, or is listed twice")
        seen.add(uuid)
        total = _integer(card_where, "total_mib", item.get("total_mib"), 0, MAX_MIB)
        free = _integer(card_where, "free_mib", item.get("free_mib"), 0, MAX_MIB)
        cards.append(Card(uuid=uuid, index=_integer(card_where, "index", item.get("index", position), 0, 1023),
                          total_mib=total, free_mib=min(free, total) if total else free))
    return tuple(sorted(cards, key=lambda card: (card.index, card.uuid)))


def _ports(where: str, item: Mapping) -> tuple[frozenset[int], tuple[int, int]]:
    used = item.get("ports_used") or []
    if not _is_list(used):
        raise PlacementError(f"{where}.ports_used: {used!r} is not a list of ports")
    ports = frozenset(_integer(where, "ports_used", port, 1, 65535) for port in used)
    span = item.get("port_range") or list(DEFAULT_PORT_RANGE)
    if not _is_list(span) or len(span) != 2:
        raise PlacementError(f"{where}.port_range: {span!r} is not [first, last]")
    first, last = (_integer(where, "port_range", port, 1, 65535) for port in span)
    if first > last:
        raise PlacementError(f"{where}.port_range: {span!r} ends before it starts")
    return ports, (first, last)


def read_hosts(raw) -> tuple[Host, ...]:
    if not _is_list(raw):
        raise PlacementError(f"hosts: {type(raw).__name__} is not a list of hosts")
    found: dict[str, Host] = {}
    for position, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise PlacementError(f"{_where('hosts', position)}: {item!r} is not a mapping")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 255:
            raise PlacementError(f"{_where('hosts', position)}.name: {name!r} is not a host name")
        where = _where("hosts", position, name)
        if name in found:
            raise PlacementError(f"{where}.name: {name!r} is listed twice")
        ports, span = _ports(where, item)
        state = item.get("state") or OPEN
        if state not in HOST_STATES:
            raise PlacementError(f"{where}.state: {state!r} is not one of {', '.join(HOST_STATES)}")
        found[name] = Host(
            name=name,
            labels=tuple((key, value or "") for key, value in _labels(where, item.get("labels"), required=False)),
            ram_free_mib=_integer(where, "ram_free_mib", item.get("ram_free_mib", 0), 0, MAX_MIB),
            cards=_cards(where, item.get("gpus")),
            gpu_margin_mib=_integer(where, "gpu_margin_mib", item.get("gpu_margin_mib", DEFAULT_GPU_MARGIN_MIB), 0,
                                    MAX_MIB),
            ram_margin_mib=_integer(where, "ram_margin_mib", item.get("ram_margin_mib", DEFAULT_RAM_MARGIN_MIB), 0,
                                    MAX_MIB),
            ports_used=ports,
            port_range=span,
            state=state,
        )
    return tuple(found[name] for name in sorted(found))


def read_current(raw) -> tuple[Current, ...]:
    if raw is None:
        return ()
    if not _is_list(raw):
        raise PlacementError(f"current: {type(raw).__name__} is not a list of placements")
    found: dict[tuple[str, int], Current] = {}
    for position, item in enumerate(raw):
        where = _where("current", position)
        if not isinstance(item, Mapping):
            raise PlacementError(f"{where}: {item!r} is not a mapping")
        key = (_name(where, "deployment", item.get("deployment")),
               _integer(where, "replica", item.get("replica"), 0, 9999))
        if key in found:
            raise PlacementError(f"{where}: replica {key[1]} of {key[0]} is listed twice")
        gpus = item.get("gpus") or []
        if not _is_list(gpus) or not all(isinstance(g, str) for g in gpus):
            raise PlacementError(f"{where}.gpus: {gpus!r} is not a list of card UUIDs")
        host = item.get("host")
        if not isinstance(host, str) or not host:
            raise PlacementError(f"{where}.host: {host!r} is not a host name")
        found[key] = Current(deployment=key[0], replica=key[1], host=host, gpus=tuple(gpus),
                             memory_mib=_integer(where, "memory_mib", item.get("memory_mib", 0), 0, MAX_MIB),
                             port=_integer(where, "port", item.get("port") or 0, 0, 65535),
                             version=str(item.get("version") or ""))
    return tuple(found[key] for key in sorted(found))
