# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The placement ledger: the controller's record of what each fleet host runs, as the fleet last saw it.

A run places over the whole fleet, but it reads only the hosts it reaches: the others are outside ``--limit``,
in another slice of the job, or down. The ledger says what those run (their placed replicas, as their judges read
them or as the run that last reached them left them) and whether a maintenance run cordoned them. Every deploy
run rewrites the entries of the hosts it read and keeps the others, so runs over disjoint parts of the fleet merge
by host; a host that left the inventory leaves the ledger.

The file carries its kind and its fleet's name. A file that is not a ledger, is damaged, or is another fleet's is
refused (``LedgerError``) and never overwritten.

Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import PlacedReplica

KIND = "llamafleet placement ledger"
VERSION = 1
FORM = ('a JSON object {"kind": "llamafleet placement ledger", "version": 1, "fleet": NAME, "hosts": {HOST: '
        '{"cordoned": true|false|null, "placed": [REPLICA, ...]}}}')


class LedgerError(ValueError):
    """A ledger this collection cannot use: not one, damaged, or another fleet's."""


@dataclass(frozen=True)
class LedgerHost:
    """One host as the fleet last saw it: the replicas placed there, and the cordon a maintenance run recorded
    (None: none recorded; the inventory's own cordon, when set, wins over it)."""

    placed: tuple[PlacedReplica, ...] = ()
    cordoned: bool | None = None

    def as_dict(self) -> dict:
        return {"cordoned": self.cordoned, "placed": [replica.as_dict() for replica in self.placed]}


@dataclass(frozen=True)
class Ledger:
    fleet: str
    hosts: Mapping[str, LedgerHost] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"kind": KIND, "version": VERSION, "fleet": self.fleet,
                "hosts": {name: self.hosts[name].as_dict() for name in sorted(self.hosts)}}


def _host(name: str, raw) -> LedgerHost:
    if not isinstance(raw, Mapping):
        raise LedgerError(f"its host {name!r} is not a mapping; expected {FORM}")
    cordoned = raw.get("cordoned")
    if cordoned is not None and not isinstance(cordoned, bool):
        raise LedgerError(f"its host {name!r} has cordoned {cordoned!r}, not true, false or null")
    placed = raw.get("placed") or []
    if not isinstance(placed, list):
        raise LedgerError(f"its host {name!r} has placed {placed!r}, not a list of replicas")
    replicas = []
    for position, item in enumerate(placed):
        try:
            replicas.append(PlacedReplica.from_dict(item))
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise LedgerError(f"its host {name!r} has a damaged replica at placed[{position}] ({err!r})") from None
    return LedgerHost(placed=tuple(replicas), cordoned=cordoned)


def read_ledger(text: str | None, fleet: str, inventory: Iterable[str]) -> Ledger:
    """The ledger in ``text`` ("" or None: no file yet, an empty ledger) for the fleet named ``fleet``, whose hosts
    are ``inventory``. Raises LedgerError, saying what is wrong, for a file that is not a ledger, is damaged, names
    another fleet, or records hosts of which none is in this inventory."""
    if not (text or "").strip():
        return Ledger(fleet=fleet)
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise LedgerError(f"it is not JSON ({err}); expected {FORM}") from None
    if not isinstance(raw, Mapping) or raw.get("kind") != KIND:
        raise LedgerError(f"it is not a placement ledger; expected {FORM}")
    if raw.get("version") != VERSION:
        raise LedgerError(f"its version {raw.get('version')!r} is not {VERSION}, the one this collection reads")
    if raw.get("fleet") != fleet:
        raise LedgerError(f"it is the ledger of the fleet {raw.get('fleet')!r}, and this run deploys {fleet!r}")
    hosts = raw.get("hosts")
    if not isinstance(hosts, Mapping):
        raise LedgerError(f"its hosts are {type(hosts).__name__}, not a mapping; expected {FORM}")
    found = {str(name): _host(str(name), entry) for name, entry in hosts.items()}
    known = set(inventory)
    if found and not known & set(found):
        raise LedgerError(f"none of its {len(found)} host(s) ({', '.join(sorted(found)[:3])}"
                          f"{' ...' if len(found) > 3 else ''}) is in this inventory: it belongs to another fleet")
    return Ledger(fleet=fleet, hosts=found)


def updated(ledger: Ledger, inventory: Iterable[str], placed: Mapping[str, Iterable[PlacedReplica]] | None = None,
            cordoned: Mapping[str, bool | None] | None = None) -> Ledger:
    """The ledger after a run: the hosts in ``placed`` get those replicas (the hosts the run read; the others keep
    their entries), the hosts in ``cordoned`` get that record (a maintenance run), and the hosts that are not in
    ``inventory`` leave it."""
    known = set(inventory)
    hosts = {name: entry for name, entry in ledger.hosts.items() if name in known}
    for name, replicas in (placed or {}).items():
        if name in known:
            ordered = tuple(sorted(replicas, key=lambda replica: (replica.deployment, replica.replica)))
            hosts[name] = replace(hosts.get(name) or LedgerHost(), placed=ordered)
    for name, state in (cordoned or {}).items():
        if name in known:
            hosts[name] = replace(hosts.get(name) or LedgerHost(), cordoned=state)
    return Ledger(fleet=ledger.fleet, hosts=hosts)


def ledger_text(ledger: Ledger) -> str:
    """The file's text: stable, so that an unchanged fleet writes the same bytes."""
    return json.dumps(ledger.as_dict(), indent=1, sort_keys=True) + "\n"
