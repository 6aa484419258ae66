"""Filters of the llama_gateway role: what the gateway routes, read from the fleet's hosts on the controller."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes, rollout_batches
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars


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


def restarting_instances(judgement, host: str, instances=()) -> list:
    """The instances a judged host's rollout will restart, write or remove (the judge's ``work``): the ones a gateway
    drains first, each as {host, instance}. When a part they share has work (the engine, a model), every instance of
    the host (``instances``, its llama_server_instances)."""
    judgement = judgement or {}
    if judgement.get("current", False):
        return []
    work = judgement.get("work") or {"all": True}
    if work.get("all"):
        names = [str(item.get("name")) for item in instances or [] if isinstance(item, dict) and item.get("name")]
    else:
        names = [str(name) for name in work.get("instances") or []]
    return [{"host": host, "instance": name} for name in names]


def deployed_instances(report, host: str) -> list:
    """The instances this run deployed and verified (state deployed): the ones a gateway puts back in rotation."""
    return [{"host": host, "instance": row.get("instance")} for row in report or []
            if row.get("state") == "deployed"]


def rollout_plan(hostvars, hosts, serial, models=()) -> dict:
    """The rollout's hosts in order and its serial list, so that no batch takes every replica of a model out of the
    gateway's rotation (rollout_batches.rollout_batches): ``models`` are the gateway's routes (each ``name`` with
    its ``replicas``, as ``host/instance``), and what each host's rollout restarts comes from its judgement."""
    hosts = list(hosts or [])
    serial = list(serial) if isinstance(serial, (list, tuple)) else [serial]
    replicas = {str(model["name"]): len(model.get("replicas") or []) for model in models or []}
    restarts = {}
    for name in hosts:
        variables = hostvars[name]
        drained = {f"{name}/{entry['instance']}" for entry in restarting_instances(
            variables.get("_llama_server_judgement"), name, role_vars.host_instances(variables))}
        restarts[name] = [str(model["name"]) for model in models or []
                          if drained & set(model.get("replicas") or [])]
    order, sizes = rollout_batches.rollout_batches(hosts, restarts, replicas, serial)
    return {"order": order, "serial": sizes}


class FilterModule:
    def filters(self):
        return {"gateway_servers": gateway_servers, "restarting_instances": restarting_instances,
                "deployed_instances": deployed_instances, "rollout_plan": rollout_plan}
