# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host's judge reads for the fleet's placement, as one typed shape: ``HostReading``.

The judge builds it on the target (``_converge/host_judge.py``) and returns ``as_dict()`` (``placement`` in its
result, JSON); the controller's placement reads it back with ``HostReading.from_dict``. The fields' names are the
keys: nothing else spells them.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Card


def _plain(value):
    """A shape as JSON-able data: dataclasses as mappings of their fields, tuples as lists."""
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if is_dataclass(value):
        return _plain_fields(value)
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


def _plain_fields(shape, exclude=()) -> dict:
    return {item.name: _plain(getattr(shape, item.name)) for item in fields(shape) if item.name not in exclude}


def _card(raw: Mapping) -> Card:
    return Card(uuid=str(raw["uuid"]), index=int(raw.get("index") or 0), total_mib=int(raw.get("total_mib") or 0),
                free_mib=int(raw.get("free_mib") or 0))


@dataclass(frozen=True)
class Need:
    """One replica's need as planned on a host: ``memory_mib`` (RAM for a CPU replica, the total over its cards for
    a card one) and ``ram_mib`` (a card replica's RAM besides), or ``why`` it is unknown."""

    memory_mib: int = 0
    ram_mib: int = 0
    why: str = ""

    @classmethod
    def from_dict(cls, raw: Mapping | None) -> Need:
        raw = raw or {}
        return cls(memory_mib=int(raw.get("memory_mib") or 0), ram_mib=int(raw.get("ram_mib") or 0),
                   why=str(raw.get("why") or ""))

    def as_dict(self) -> dict:
        # A need or why there is none, never both.
        return {"why": self.why} if self.why else _plain_fields(self, exclude=("why",))


@dataclass(frozen=True)
class PlacedReplica:
    """A replica placed on the host before: its state file's record (``placement_record``: deployment, replica,
    port, cards) under its instance name, with the need its plan has, its deployment's version, and whether it
    runs its plan (``current``)."""

    instance: str
    deployment: str
    replica: int
    port: int = 0
    cuda_visible_devices: str = ""
    memory_mib: int = 0
    version: str = ""
    current: bool = False

    @classmethod
    def from_dict(cls, raw: Mapping) -> PlacedReplica:
        return cls(instance=str(raw["instance"]), deployment=str(raw["deployment"]), replica=int(raw["replica"]),
                   port=int(raw.get("port") or 0), cuda_visible_devices=str(raw.get("cuda_visible_devices") or ""),
                   memory_mib=int(raw.get("memory_mib") or 0), version=str(raw.get("version") or ""),
                   current=bool(raw.get("current")))

    def as_dict(self) -> dict:
        return _plain_fields(self)


@dataclass(frozen=True)
class HostCapacity:
    """The host's free RAM (cgroup-capped, less what the running engines reserved and do not use yet), its cards
    (NVML's free memory) and the ports the placement must not give."""

    ram_total_mib: int = 0
    ram_free_mib: int = 0
    reserved_mib: int = 0
    gpus: tuple[Card, ...] = ()
    ports_used: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, raw: Mapping) -> HostCapacity:
        return cls(ram_total_mib=int(raw.get("ram_total_mib") or 0), ram_free_mib=int(raw.get("ram_free_mib") or 0),
                   reserved_mib=int(raw.get("reserved_mib") or 0),
                   gpus=tuple(_card(card) for card in raw.get("gpus") or []),
                   ports_used=tuple(int(port) for port in raw.get("ports_used") or []))

    def as_dict(self) -> dict:
        return _plain_fields(self)


@dataclass(frozen=True)
class HostReading:
    """What the placement reads of one host: its capacity, the replicas placed there before, each deployment's need
    as planned there (by deployment name), and whether the host must first get its shared parts (engine, runtime,
    models) to plan them at all."""

    capacity: HostCapacity
    placed: tuple[PlacedReplica, ...] = ()
    estimates: Mapping[str, Need] = field(default_factory=dict)
    needs_preparing: bool = False

    @classmethod
    def from_dict(cls, raw: Mapping | None) -> HostReading | None:
        """The reading; None for a host its judge could not read (no capacity)."""
        if not raw or not raw.get("capacity"):
            return None
        return cls(capacity=HostCapacity.from_dict(raw["capacity"]),
                   placed=tuple(PlacedReplica.from_dict(replica) for replica in raw.get("placed") or []),
                   estimates={str(name): Need.from_dict(need) for name, need in (raw.get("estimates") or {}).items()},
                   needs_preparing=bool(raw.get("needs_preparing")))

    def as_dict(self) -> dict:
        return _plain_fields(self)
