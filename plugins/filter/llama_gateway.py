"""Filters of the llama_gateway role: what the gateway routes, read from the fleet's hosts on the controller."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_run, role_vars


def _keys(variables) -> dict:
    """Each present instance's API key, as the instance step takes it (preset_layers.preset_and_key)."""
    return {str(instance.get("name")): key for instance, _preset, key in role_vars.present_instances(variables)}


def gateway_servers(hostvars, hosts, keep_hosts=()) -> dict:
    """The fleet's routes for llamafleet.llamacpp.llama_gateway_config (fleet_routes.fleet_servers), from each
    host's report of this run (``llama_server_report``), address (``ansible_host``) and instances' keys. The hosts
    in ``keep_hosts`` are left to the module, which keeps their servers as the gateway has them."""
    hosts = [name for name in hosts or [] if name not in set(keep_hosts or [])]
    fleet = [{**role_vars.fleet_host(hostvars, name), "keys": _keys(hostvars[name])} for name in hosts]
    if hosts and not keep_hosts and all(host["report"] is None for host in fleet):
        raise AnsibleFilterError("no host of the fleet was judged or deployed in this run, so nothing says what runs "
                                 "there: run the gateway from playbooks/deploy-llm.yml, after its judge")
    found = fleet_routes.fleet_servers(fleet)
    if found["errors"]:
        raise AnsibleFilterError("the gateway cannot route the fleet: " + "; ".join(found["errors"]))
    return found


def deployed_instances(report, host: str) -> list:
    """The instances this run deployed and verified (state deployed): the ones a gateway puts back in rotation."""
    return [{"host": host, "instance": row.get("instance")} for row in report or []
            if row.get("state") == "deployed"]


class FilterModule:
    def filters(self):
        return {"gateway_servers": gateway_servers, "restarting_instances": fleet_run.restarting_instances,
                "deployed_instances": deployed_instances, "unfinished_hosts": fleet_run.unfinished}
