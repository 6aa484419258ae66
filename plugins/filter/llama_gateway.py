"""Filters of the llama_gateway role: what the gateway routes, read from the fleet's hosts on the controller."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes, rollout_batches
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import preset_layers


def _keys(variables) -> dict:
    """Each present instance's API key, as the instance step takes it (preset_layers.preset_and_key)."""
    keys = {}
    for instance in variables.get("llama_server_instances") or []:
        if not isinstance(instance, dict) or instance.get("state", "present") != "present":
            continue
        try:
            keys[str(instance.get("name"))] = preset_layers.preset_and_key(
                instance, variables.get("llama_server_presets") or {})[1]
        except preset_layers.PresetLayerError:
            continue  # the judge refused this instance already: it has no row to route
    return keys


def gateway_servers(hostvars, hosts) -> dict:
    """The fleet's routes for llamafleet.llamacpp.llama_gateway_config (fleet_routes.fleet_servers), from each
    host's report of this run (``llama_server_report``), address (``ansible_host``) and instances' keys."""
    hosts = list(hosts or [])
    fleet = []
    for name in hosts:
        variables = hostvars[name]
        report = variables.get("llama_server_report")
        fleet.append({"name": name, "address": variables.get("ansible_host") or name,
                      "report": list(report) if report is not None else None, "keys": _keys(variables)})
    if hosts and all(host["report"] is None for host in fleet):
        raise AnsibleFilterError("no host of the fleet was judged or deployed in this run, so nothing says what runs "
                                 "there: run the gateway from playbooks/deploy-llm.yml, after its judge")
    found = fleet_routes.fleet_servers(fleet)
    if found["errors"]:
        raise AnsibleFilterError("the gateway cannot route the fleet: " + "; ".join(found["errors"]))
    return found


def restarting_instances(report, host: str) -> list:
    """The instances of a host's judged report that the rollout will restart or remove: the ones a gateway drains
    first. Each as {host, instance}."""
    found = []
    for row in report or []:
        if row.get("would_restart") or (row.get("state") == "absent" and row.get("changed")):
            found.append({"host": host, "instance": row.get("instance")})
    return found


def deployed_instances(report, host: str) -> list:
    """The instances this run deployed and verified (state deployed): the ones a gateway puts back in rotation."""
    return [{"host": host, "instance": row.get("instance")} for row in report or []
            if row.get("state") == "deployed"]


def rollout_plan(hostvars, hosts, serial, judged_hosts=(), gateways=False) -> dict:
    """The rollout's hosts in order and its serial list. Without a gateway, the hosts and the operator's serial as
    they are; with one, batches in which no model loses every serving replica at once
    (rollout_batches.rollout_batches), from each judged host's report: the models its rollout will restart, and the
    serving replicas of each model across the fleet."""
    hosts = list(hosts or [])
    serial = list(serial) if isinstance(serial, (list, tuple)) else [serial]
    if not gateways or not hosts:
        return {"order": hosts, "serial": serial}
    replicas: dict = {}
    for name in judged_hosts or hosts:
        for row in hostvars[name].get("llama_server_report") or []:
            if row.get("state") == "deployed" and row.get("model_name"):
                replicas[row["model_name"]] = replicas.get(row["model_name"], 0) + 1
    restarts = {}
    for name in hosts:
        rows = hostvars[name].get("llama_server_report") or []
        drained = {entry["instance"] for entry in restarting_instances(rows, name)}
        restarts[name] = [row.get("model_name") for row in rows if row.get("instance") in drained
                          and row.get("model_name")]
    order, sizes = rollout_batches.rollout_batches(hosts, restarts, replicas, serial)
    return {"order": order, "serial": sizes}


class FilterModule:
    def filters(self):
        return {"gateway_servers": gateway_servers, "restarting_instances": restarting_instances,
                "deployed_instances": deployed_instances, "rollout_plan": rollout_plan}
