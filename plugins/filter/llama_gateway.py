"""Filters of the llama_gateway role: what the gateway routes, read from the fleet's hosts on the controller."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.haproxy_config import gateway_urls
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_run, gateway_fleet


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
        return gateway_fleet.gateway_servers(hostvars, hosts, keep_hosts, cordoned_hosts)
    except gateway_fleet.GatewayFleetError as err:
        if errors == "raise":
            raise AnsibleFilterError(str(err)) from None
        return {"error": str(err)}


def deployed_instances(report, host: str) -> list:
    """The instances this run deployed and verified (state deployed): the ones a gateway puts back in rotation."""
    return [{"host": host, "instance": served.get("instance")} for row in report or []
            if row.get("state") == "deployed" for served in fleet_routes.served_rows(row)]


class FilterModule:
    def filters(self):
        return {"gateway_servers": gateway_servers, "gateway_urls": gateway_urls,
                "restarting_instances": fleet_run.restarting_instances, "deployed_instances": deployed_instances,
                "unfinished_hosts": fleet_run.unfinished, "gateways_to_configure": fleet_run.gateways_to_configure}
