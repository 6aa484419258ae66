"""Filters of the llama_gateway role: what the gateway routes, read from the fleet's hosts on the controller."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_run, role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once


def _in_rotation(host: dict, variables, cordoned: set) -> dict:
    """A host as the gateway routes it: a cordoned host's instances placed by hand leave the rotation (they keep
    running); its placed replicas stay until their new copies serve."""
    if host["name"] not in cordoned or host["report"] is None:
        return host
    hand = {str(item.get("name")) for item in variables.get(role_vars.HAND_INSTANCES) or [] if isinstance(item, dict)}
    return {**host, "report": [row for row in host["report"] if str(row.get("instance")) not in hand]}


def gateway_servers(hostvars, hosts, keep_hosts=(), cordoned_hosts=(), errors="raise") -> dict:
    """The fleet's routes for llamafleet.llamacpp.llama_gateway_config (fleet_routes.fleet_servers), from each
    host's report of this run (``llama_server_report``), address (``ansible_host``) and instances' keys. The hosts
    in ``keep_hosts`` are left to the module, which keeps their servers as the gateway has them; the hand-placed
    instances of the ``cordoned_hosts`` are not routed. With ``errors`` "value", why the fleet cannot be routed is
    returned as ``{"error": why}`` instead of raised: the role reads the fleet once for all the play's gateways
    (run_once), and a failed run_once task would not say why on every gateway."""
    if errors not in ("raise", "value"):
        raise AnsibleFilterError(f"errors={errors!r}: give raise or value")
    try:
        return _gateway_servers(hostvars, hosts, keep_hosts, cordoned_hosts)
    except AnsibleFilterError as err:
        if errors == "raise":
            raise
        return {"error": str(err)}


def _gateway_servers(hostvars, hosts, keep_hosts, cordoned_hosts) -> dict:
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
        raise AnsibleFilterError("no host of the fleet was judged or deployed in this run, so nothing says what runs "
                                 "there: run the gateway from playbooks/deploy-llm.yml, after its judge")
    found = fleet_routes.fleet_servers(fleet)
    if found["errors"]:
        raise AnsibleFilterError("the gateway cannot route the fleet: " + "; ".join(found["errors"]))
    # Given back as they came: the playbook computes them over the whole fleet's variables (unfinished_hosts), and
    # the role's next task reads them from here rather than computing them again.
    return {**found, "keep_hosts": list(keep_hosts or [])}


def deployed_instances(report, host: str) -> list:
    """The instances this run deployed and verified (state deployed): the ones a gateway puts back in rotation."""
    return [{"host": host, "instance": row.get("instance")} for row in report or []
            if row.get("state") == "deployed"]


class FilterModule:
    def filters(self):
        return {"gateway_servers": gateway_servers, "restarting_instances": fleet_run.restarting_instances,
                "deployed_instances": deployed_instances, "unfinished_hosts": fleet_run.unfinished}
