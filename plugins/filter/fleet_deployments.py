# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the deploy playbook's placement (docs/placement.md): a host's placed replicas as the role's
instances, and which of the replicas it no longer keeps may be removed now."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import (
    placed_instances as _placed_instances,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import removable
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_run


def placed_instances(share, deployments) -> list[dict]:
    """fleet_deployments' ``hosts[host].instances`` as instances of llama_server_instances."""
    return _placed_instances(list(share or []), list(deployments or []))


class _Reports(Mapping):
    """The reports (``llama_server_report``) of the run's ``hosts``, each read from hostvars when first asked for:
    a host removes a few replicas, and reading every host's variables for each would cost the fleet's size each
    time."""

    def __init__(self, hostvars, hosts):
        self._hostvars = hostvars
        self._hosts = set(hosts or [])
        self._read: dict = {}

    def __getitem__(self, host):
        if host not in self._hosts:
            raise KeyError(host)
        if host not in self._read:
            self._read[host] = list((self._hostvars.get(host) or {}).get("llama_server_report") or [])
        return self._read[host]

    def __iter__(self):
        return iter(self._hosts)

    def __len__(self):
        return len(self._hosts)


def replicas_to_remove(names, placement, hostvars, hosts) -> list[dict]:
    """Of ``names`` (a host's replicas to remove), those whose new host already runs them or that have none, as
    absent instances of the role. ``placement``: the whole placement, or the host's share of it (its ``moved_to``
    holds the new homes of its own replicas: nothing of the fleet's placement is read per host)."""
    reports = _Reports(hostvars, hosts)
    gone = removable(list(names or []), placement if isinstance(placement, Mapping) else {}, reports)
    return [{"name": name, "state": "absent"} for name in gone]


def fleet_pattern(pattern):
    """llama_fleet_hosts, checked (plugin_utils/fleet_run.fleet_pattern)."""
    try:
        return fleet_run.fleet_pattern(pattern)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def removal_hosts(hostvars, hosts) -> list[str]:
    """The run's hosts that remove placed replicas after the rollout and did not fail (none for a syntax check,
    which has no hostvars)."""
    return fleet_run.removal_hosts(hostvars, hosts) if isinstance(hostvars, Mapping) else []


class FilterModule:
    def filters(self):
        return {"placed_instances": placed_instances, "replicas_to_remove": replicas_to_remove,
                "gateways_before_removals": fleet_run.gateways_before_removals,
                "gateways_after_rollout": fleet_run.gateways_after_rollout, "removal_hosts": removal_hosts,
                "hosts_with_work": fleet_run.hosts_with_work, "fleet_pattern": fleet_pattern}
