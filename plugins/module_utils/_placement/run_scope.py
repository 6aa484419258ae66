# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a deploy run may do on each host of the fleet, for the placement: ``RunScope``.

A fleet is never all there. A run reads the hosts its judge reached; the others are outside ``--limit`` (or in
another slice of the job), unreachable, or their judge failed. The placement still counts every host:

- a host the run read is ``open`` (it takes replicas), or ``cordoned`` (it takes none, and its replicas move);
- a host outside the run, or one whose judge failed, is ``frozen``: it keeps what the ledger says it runs, counted
  as it runs, and takes nothing new (this run cannot change it);
- an unreachable host is frozen too under the ``keep`` policy (a short, planned outage); under ``replace`` (the
  default) its replicas count as lost and are placed again on the hosts the run reached.

A host outside the run that the ledger has no record of cannot be counted (it may run replicas no one knows of):
``unrecorded`` names it, and the run is refused until one run has reached the whole fleet.

Pure: hosts, statuses, cordons and the ledger in; the scope out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import Ledger
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import HostReading, PlacedReplica

REPLACE, KEEP = "replace", "keep"
UNREACHABLE_POLICIES = (REPLACE, KEEP)
FAILED_STATUS = "failed"


@dataclass(frozen=True)
class RunScope:
    """The fleet's hosts by what this run may do there (each tuple in inventory order)."""

    read: tuple[str, ...] = ()  # read by this run's judge: open or cordoned
    cordoned: tuple[str, ...] = ()  # of ``read``: take nothing new, and what they run moves
    frozen: Mapping[str, tuple[PlacedReplica, ...]] = field(default_factory=dict)  # kept as the ledger has them
    lost: Mapping[str, tuple[PlacedReplica, ...]] = field(default_factory=dict)  # unreachable, placed again
    outside: tuple[str, ...] = ()  # not in this run (--limit, another slice)
    unreachable: tuple[str, ...] = ()  # in the run, and the judge lost them
    failed: tuple[str, ...] = ()  # in the run, and their judge failed
    unrecorded: tuple[str, ...] = ()  # outside the run, and the ledger has no record of them
    cordoned_elsewhere: tuple[str, ...] = ()  # cordoned, and not read: their replicas move once a run reads them

    @property
    def whole(self) -> bool:
        """Whether this run reads every host of the fleet (then a replica with no room refuses the run)."""
        return not (self.outside or self.unreachable or self.failed)

    def not_read(self) -> tuple[str, ...]:
        """The fleet hosts this run did not read, in inventory order: nothing in it says what they run now."""
        return (*self.outside, *self.unreachable, *self.failed)


def run_scope(inventory: Iterable[str], run_hosts: Iterable[str], readings: Mapping[str, HostReading], *,
              statuses: Mapping[str, str | None], cordons: Mapping[str, bool | None], ledger: Ledger,
              unreachable: str = REPLACE) -> RunScope:
    """The scope of a run over ``inventory`` (the fleet's hosts, in order) that holds ``run_hosts``, read
    ``readings`` (by host), left each host's status (``statuses``: None where the judge lost it, ``failed`` where it
    failed) and sees each host's cordon (``cordons``: the inventory's value, None where it sets none; the ledger's
    record then speaks)."""
    if unreachable not in UNREACHABLE_POLICIES:
        raise ValueError(f"{unreachable!r} is not one of {', '.join(UNREACHABLE_POLICIES)}")
    in_run = set(run_hosts)
    read, cordoned, outside, lost_hosts, failed, unrecorded, elsewhere = [], [], [], [], [], [], []
    frozen: dict[str, tuple[PlacedReplica, ...]] = {}
    lost: dict[str, tuple[PlacedReplica, ...]] = {}
    for host in inventory:
        record = ledger.hosts.get(host)
        placed = record.placed if record else ()
        given = cordons.get(host)
        is_cordoned = bool(given if given is not None else (record.cordoned if record else False))
        if host in in_run and readings.get(host) is not None:
            read.append(host)
            if is_cordoned:
                cordoned.append(host)
            continue
        if is_cordoned:
            elsewhere.append(host)
        if host not in in_run:
            outside.append(host)
            if record is None:
                unrecorded.append(host)
            frozen[host] = placed
        elif statuses.get(host) is None:
            lost_hosts.append(host)
            if unreachable == REPLACE:
                lost[host] = placed
            else:
                frozen[host] = placed
        else:
            failed.append(host)
            frozen[host] = placed
    return RunScope(read=tuple(read), cordoned=tuple(cordoned), frozen=frozen, lost=lost, outside=tuple(outside),
                    unreachable=tuple(lost_hosts), failed=tuple(failed), unrecorded=tuple(unrecorded),
                    cordoned_elsewhere=tuple(elsewhere))
