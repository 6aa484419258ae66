# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fleet's placement reads on one host, in the judge's run: the replicas placed here before (their
records in the instances' state files), the host's capacity, and each deployment's memory need as planned here.

Thin readings; the rules are in ``_placement`` on the controller. The capacity is what is free now, less what
the running engines have reserved and not touched yet: a CPU engine's compute buffer and KV cache are allocated at
load but only become resident as they are used, so the free RAM alone would count them as free twice.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable, Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import placement_record
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Card
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    Need,
    PlacedReplica,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gpu import list_gpus
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.memory import ram_facts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.port import read_listeners

_STATE_PREFIX, _STATE_SUFFIX = "instance-", ".json"


def placed_records(config_dir: str) -> list[PlacedReplica]:
    """The placed replicas whose state file this host has: each record under its instance name (not judged yet: no
    need, not current). A file that cannot be read, or has no record, is a hand-placed instance's (or not ours) and
    is left alone."""
    found = []
    for path in sorted(glob.glob(os.path.join(glob.escape(config_dir), f"{_STATE_PREFIX}*{_STATE_SUFFIX}"))):
        name = os.path.basename(path)[len(_STATE_PREFIX):-len(_STATE_SUFFIX)]
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue
        record = data.get("placement") if isinstance(data, dict) else None
        if not isinstance(record, dict):
            continue
        try:
            found.append(PlacedReplica(instance=name, **placement_record(record, record.get("port"),
                                                                         record.get("cuda_visible_devices"))))
        except (KeyError, TypeError, ValueError):
            continue
    return found


def listening_ports(root: str = "/") -> set[int]:
    return {listener.port for listener in read_listeners(root)}


def capacity(*, reserved_mib: int, ports_of_replicas: Iterable[int], planned_ports: Iterable[int]) -> HostCapacity:
    """The host's free RAM (cgroup-capped, less ``reserved_mib``), its cards (NVML's free memory), and the ports
    the placement must not give: every listener and every hand-placed instance's planned port, but the placed
    replicas' own (the controller keeps those)."""
    total, avail = ram_facts()
    gpus, _why = list_gpus()
    ports = (listening_ports() | {int(port) for port in planned_ports if port}) - {int(p) for p in ports_of_replicas}
    return HostCapacity(
        ram_total_mib=total,
        ram_free_mib=max(avail - max(reserved_mib, 0), 0),
        reserved_mib=max(reserved_mib, 0),
        gpus=tuple(Card(uuid=gpu.uuid, index=gpu.index, total_mib=gpu.total_mib,
                        free_mib=gpu.free_mib if gpu.free_mib >= 0 else gpu.total_mib) for gpu in gpus or []),
        ports_used=tuple(sorted(ports)),
    )


def need_of(memory: Mapping | None, gpus: int) -> Need:
    """A plan's memory estimate as the placement's need of one replica (its cards' total for a card replica, with
    its RAM besides), or why it is unknown."""
    memory = memory or {}
    if not memory.get("known"):
        return Need(why=str(memory.get("why_unknown") or "the plan has no memory estimate"))
    if gpus:
        return Need(memory_mib=int(memory.get("cards_mib") or 0), ram_mib=int(memory.get("host_mib") or 0))
    return Need(memory_mib=int(memory.get("host_mib") or 0))
