# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a gateway routes, read from the fleet's hosts on the controller: the gateway role's filter
(``gateway_servers``) and the gateway's judge (``llama_gateway_judge``) read it the same way."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once


class GatewayFleetError(ValueError):
    """The fleet cannot be routed: the message says why."""


def _in_rotation(host: dict, variables, cordoned: set) -> dict:
    """A host as the gateway routes it: a cordoned host's instances placed by hand leave the rotation (they keep
    running); its placed replicas stay until their new copies serve."""
    if host["name"] not in cordoned or host["report"] is None:
        return host
    hand = {str(item.get("name")) for item in variables.get(role_vars.HAND_INSTANCES) or [] if isinstance(item, dict)}
    return {**host, "report": [row for row in host["report"] if str(row.get("instance")) not in hand]}


def gateway_servers(hostvars, hosts, keep_hosts=(), cordoned_hosts=()) -> dict:
    """The fleet's routes (fleet_routes.fleet_servers), from each host's report of this run (``llama_server_report``),
    address (``ansible_host``) and instances' keys. The hosts in ``keep_hosts`` are left to the gateway, which keeps
    their servers as it has them; the hand-placed instances of the ``cordoned_hosts`` are not routed. Raises
    GatewayFleetError when the fleet cannot be routed."""
    hostvars = read_once(hostvars)
    kept = set(keep_hosts or [])
    hosts = [name for name in hosts or [] if name not in kept]
    cordoned = set(cordoned_hosts or [])
    fleet = []
    for name in hosts:
        variables = hostvars[name]
        host = {**role_vars.fleet_host(hostvars, name, variables), "keys": role_vars.instance_keys(variables)}
        fleet.append(_in_rotation(host, variables, cordoned))
    if hosts and not keep_hosts and all(host["report"] is None for host in fleet):
        raise GatewayFleetError("no host of the fleet was judged or deployed in this run, so nothing says what runs "
                                "there: run the gateway from playbooks/deploy-llm.yml, after its judge")
    found = fleet_routes.fleet_servers(fleet)
    if found["errors"]:
        raise GatewayFleetError("the gateway cannot route the fleet: " + "; ".join(found["errors"]))
    # Given back as they came: the playbook computes them over the whole fleet's variables (unfinished_hosts), and
    # the role's next task reads them from here rather than computing them again.
    return {**found, "keep_hosts": list(keep_hosts or [])}
