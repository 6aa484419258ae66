# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The placement ledger on the controller: read and written beside the run (``_placement/ledger.py`` decides what
is in it), and the run's scope (``_placement/run_scope.py``) from the hosts' variables.

Used by the actions ``fleet_run`` (checks the ledger and the settings before anything changes), ``fleet_deployments``
(places with the scope) and ``fleet_ledger`` (records the run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import (
    Ledger,
    LedgerError,
    ledger_text,
    read_ledger,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import HostReading
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.run_scope import (
    UNREACHABLE_POLICIES,
    RunScope,
    run_scope,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_bytes, write_atomically
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import STATUS


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


def settings_refusal(hostvars: Mapping, inventory: Sequence[str], *, unreachable, ledger_path: str, fleet: str,
                     placing: bool) -> str:
    """Why the run's fleet settings refuse it ("" when they do not): the unreachable-host policy, every fleet host's
    cordon, and (when the run places deployments) the ledger."""
    problems = []
    for check in (lambda: policy(unreachable), lambda: cordons(hostvars, inventory),
                  lambda: load(ledger_path, fleet, inventory) if placing else None):
        try:
            check()
        except FleetSettingError as err:
            problems.append(str(err))
    return "; ".join(problems)


def scope(hostvars: Mapping, inventory: Sequence[str], run_hosts: Sequence[str],
          readings: Mapping[str, HostReading], *, ledger: Ledger, unreachable) -> RunScope:
    """The run's scope: what the placement may do on each fleet host (run_scope.run_scope), from the hosts'
    statuses and cordons."""
    statuses = {host: (hostvars.get(host) or {}).get(STATUS) for host in inventory}
    return run_scope(inventory, run_hosts, readings, statuses=statuses, cordons=cordons(hostvars, inventory),
                     ledger=ledger, unreachable=policy(unreachable))
