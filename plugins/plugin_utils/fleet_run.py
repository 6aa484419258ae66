# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's run on the controller: which hosts it holds, and in which order and batches it rolls out.

Computed once, in Python, by the actions ``fleet_run`` and ``fleet_rollout``; the playbook reads their facts by name
(``llama_fleet_run``, ``llama_fleet_rollout``) instead of Jinja pipelines over ``hostvars`` in its plays' ``hosts``
and ``serial``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_batches, rollout_bounds
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import router_server_name
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.router import model_ids
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once

RUN_FACT = "llama_fleet_run"
ROLLOUT_FACT = "llama_fleet_rollout"
# What the deploy playbook records per host: judged (the judge found work), ok (nothing to do, or done), started
# (its batch began), failed (its rescue ran). No status: the judge lost the host.
STATUS = "llama_fleet_status"
JUDGED, STARTED, DONE, FAILED = "judged", "started", "ok", "failed"
JUDGEMENT = "_llama_server_judgement"  # what the judge play registered on the host
GATEWAY_MODELS = "llama_gateway_models"  # the routes a gateway's role found (each name with its replicas)


FLEET_HOSTS = "llama_fleet_hosts"  # the deploy playbook's host pattern


def fleet_pattern(pattern) -> str | list:
    """The deploy playbook's host pattern (llama_fleet_hosts) as a play's ``hosts`` takes it - a pattern (a group, a
    host, ``a:&b``, ...), or a list of them - when it is one. ValueError naming the variable otherwise: an empty one
    would make every play match no host, and the run end without a word."""
    entries = pattern if isinstance(pattern, list) else [pattern]
    if not entries or not all(isinstance(entry, str) and entry.strip() for entry in entries):
        raise ValueError(f"{FLEET_HOSTS}: {pattern!r} is not a host pattern; accepted: an inventory group or host, a "
                         "pattern such as 'llama_fleet:&rack1', or a list of them (default llama_fleet)")
    return pattern


def run_facts(hosts: Sequence[str], inventory_hosts: Sequence[str], gateway_group: str,
              groups: Mapping[str, Sequence[str]]) -> dict:
    """The run's hosts (the fleet's, within --limit, in inventory order), the fleet's whole inventory (what the
    placement and the scrape targets count even outside --limit), and the fleet's gateways."""
    return {"hosts": list(hosts), "inventory_hosts": list(inventory_hosts),
            "gateways": list(groups.get(gateway_group) or [])}


def restarting_instances(judgement, host: str, instances=()) -> list:
    """The instances a judged host's rollout will restart, write or remove (the judge's ``work``, of the host's
    ``instances``): the ones a gateway drains first, each as {host, instance, step}. When a part they share has work
    (the engine, a model), every instance of the host (``instances``, its llama_server_instances)."""
    judgement = judgement or {}
    if judgement.get("current", False):
        return []
    work = judgement.get("work") or {"all": True}
    listed = [str(item.get("name")) for item in instances or [] if isinstance(item, Mapping) and item.get("name")]
    if work.get("all"):
        names = listed
    else:
        # An instance the judge found with work that the host no longer lists is not restarted by its rollout: a
        # replica whose new copy starts first elsewhere or beside it (surge), removed after the rollout.
        names = [str(name) for name in work.get("instances") or [] if not instances or str(name) in listed]
    # A router instance's gateway servers are its models (fleet_routes.router_server_name): the judge says which
    # of them to drain (all for a restart; those to reload), and without its judgement (a shared part changes) all
    # of them are. ``step`` names the instance whose step drains them.
    routers = {str(item.get("name")): [router_server_name(str(item["name"]), model) for model in model_ids(item)]
               for item in instances or () if isinstance(item, Mapping) and item.get("models") is not None}
    routers.update(work.get("router_drain") or {})
    return [{"host": host, "instance": server, "step": name} for name in names
            for server in routers.get(name, [name])]


def _replica_deployments(hostvars: Mapping, hosts: Sequence[str]) -> dict[str, str]:
    """Each placed replica's deployment, by its gateway replica name (``host/instance``)."""
    found = {}
    for name in hosts:
        for instance in role_vars.host_instances(hostvars.get(name) or {}):
            placement = instance.get("placement") if isinstance(instance, Mapping) else None
            if isinstance(placement, Mapping) and placement.get("deployment"):
                found[f"{name}/{instance.get('name')}"] = str(placement["deployment"])
    return found


def model_bounds(models: Iterable[Mapping], fleet: rollout_bounds.RolloutBounds,
                 deployments: Mapping[str, rollout_bounds.RolloutBounds] | None = None,
                 replica_deployments: Mapping[str, str] | None = None) -> dict[str, int]:
    """How many of each routed model's replicas may be out of rotation at once: its bound over its serving replicas
    (``rollout_bounds.RolloutBounds.unavailable``). A model whose replicas belong to deployments with bounds of their
    own takes the strictest of the bounds that apply to its replicas (a hand-placed replica has the fleet's)."""
    deployments = deployments or {}
    replica_deployments = replica_deployments or {}
    allowed = {}
    for model in models:
        replicas = [str(name) for name in model.get("replicas") or []]
        applying = {deployments.get(replica_deployments.get(name, ""), fleet) for name in replicas} or {fleet}
        allowed[str(model["name"])] = min(bounds.unavailable(len(replicas)) for bounds in applying)
    return allowed


def rollout_plan(hostvars: Mapping, hosts: Sequence[str], serial, models: Iterable[Mapping] = (), *,
                 fleet: rollout_bounds.RolloutBounds | None = None,
                 deployments: Mapping[str, rollout_bounds.RolloutBounds] | None = None) -> dict:
    """The rollout's hosts in order and its serial list, so that no batch takes more of a model's replicas out of the
    gateway's rotation than its bound (rollout_batches.rollout_batches; ``fleet``: the fleet's bounds, default 25 %;
    ``deployments``: the deployments' own): ``models`` are the gateway's routes (each ``name`` with its
    ``replicas``, as ``host/instance``), and what each host's rollout restarts comes from its judgement.
    ``refusal`` says which models would restart while their bound lets none out ("" when none)."""
    hosts = list(hosts or [])
    serial = list(serial) if isinstance(serial, (list, tuple)) else [serial]
    models = list(models or [])
    fleet = fleet or rollout_bounds.read_bounds()
    model_of = {str(replica): str(model["name"]) for model in models for replica in model.get("replicas") or []}
    routed_hosts = sorted({replica.split("/", 1)[0] for replica in model_of})
    allowed = model_bounds(models, fleet, deployments,
                           _replica_deployments(hostvars, routed_hosts) if deployments else {})
    restarts = {}
    for name in hosts:
        variables = hostvars[name]
        drained = (model_of.get(f"{name}/{entry['instance']}") for entry in restarting_instances(
            variables.get(JUDGEMENT), name, role_vars.host_instances(variables)))
        restarts[name] = sorted({model for model in drained if model})
    blocked = sorted({model for name in hosts for model in restarts[name] if allowed.get(model, 1) == 0})
    order, sizes = rollout_batches.rollout_batches(hosts, restarts, allowed, serial)
    refusal = ""
    if blocked:
        refusal = (f"model(s) {', '.join(blocked)} would restart, but {role_vars.MAX_UNAVAILABLE} lets none of "
                   "their replicas leave the gateways' rotation and none can start a new copy first: give "
                   f"{role_vars.MAX_UNAVAILABLE} 1 or more for them (nothing was changed)")
    return {"order": order, "serial": sizes, "allowed": {model: allowed[model] for model in sorted(allowed)},
            "refusal": refusal}


def hosts_with_work(hostvars: Mapping, hosts: Sequence[str]) -> list[str]:
    """The run's hosts whose judge found work (status judged), in the order of ``hosts``: the rollout's hosts, before
    its order is decided. None for a syntax check, which has no hostvars."""
    if not isinstance(hostvars, Mapping):
        return []
    hostvars = read_once(hostvars)
    return [name for name in hosts if (hostvars.get(name) or {}).get(STATUS) == JUDGED]


# The rollout before fleet_rollout decides it, or when no host has work (its play then matches nothing): fleet_run
# sets it, so that no run reads the order of an earlier run (a fact cache keeps localhost's facts).
NO_ROLLOUT = {"order": [], "serial": [1], "allowed": {}, "refusal": ""}


def serial_refusal(serial) -> str:
    """Why the operator's ``serial`` (llama_fleet_serial) cannot batch a rollout, or "": read as the rollout's
    batches read it (rollout_batches.batch_sizes)."""
    try:
        rollout_batches.batch_sizes(list(serial) if isinstance(serial, (list, tuple)) else [serial], 1)
    except (TypeError, ValueError) as err:
        return (f"llama_fleet_serial {serial!r}: {err}; accepted: a number, a percentage (\"25%\") or a list of "
                "them, as a play's serial")
    return ""


def rollout(hostvars: Mapping, hosts: Sequence[str], gateways: Sequence[str], serial, *,
            fleet: rollout_bounds.RolloutBounds | None = None,
            deployments: Mapping[str, rollout_bounds.RolloutBounds] | None = None) -> dict:
    """The rollout of this run: its hosts with work (the judge's status), in inventory order (the first is the
    canary), batched by the operator's ``serial`` and, with gateways, by the models their routes hold (the first
    gateway that has routes speaks for all: they route the same fleet) and their bounds."""
    hostvars = read_once(hostvars)  # the hosts with work, then what each restarts: one read per host
    work = hosts_with_work(hostvars, hosts)
    models = next((hostvars[name][GATEWAY_MODELS] for name in gateways
                   if (hostvars.get(name) or {}).get(GATEWAY_MODELS) is not None), [])
    return rollout_plan(hostvars, work, serial, models, fleet=fleet, deployments=deployments)


def unfinished(hostvars: Mapping, hosts: Sequence[str], inventory_hosts: Sequence[str] = ()) -> list[str]:
    """The hosts whose servers a gateway keeps as it has them: the rollout's ``hosts`` it did not finish (their batch
    never ran, or they were lost on the way), and the fleet hosts of ``inventory_hosts`` that have no report in this
    run (outside --limit or this slice, or lost by the judge), so that a partial run never undoes what another run
    routed."""
    hostvars = read_once(hostvars)  # a host of both lists is read once
    found = [name for name in hosts if (hostvars.get(name) or {}).get(STATUS) not in (DONE, FAILED)]
    taken = set(found)
    found += [name for name in inventory_hosts or () if name not in taken
              and (hostvars.get(name) or {}).get(role_vars.REPORT) is None]
    return found


REMOVALS = "_llama_fleet_removals"  # the placed replicas a host no longer keeps (the judge play's share)


def removal_hosts(hostvars: Mapping, hosts: Sequence[str]) -> list[str]:
    """The run's hosts that remove placed replicas after the rollout (moved elsewhere, or gone), and did not fail."""
    hostvars = read_once(hostvars)
    return [name for name in hosts if (hostvars.get(name) or {}).get(REMOVALS)
            and (hostvars.get(name) or {}).get(STATUS) != FAILED]


def gateways_before_removals(hostvars: Mapping, hosts: Sequence[str], gateways: Sequence[str]) -> list[str]:
    """The gateways to configure between the rollout and the removals (so that a moved replica is in rotation
    before its old copy goes): all of them when a host of the run removes replicas, none otherwise (and none for a
    syntax check, which has no hostvars)."""
    if not isinstance(hostvars, Mapping):
        return []
    return list(gateways) if removal_hosts(hostvars, hosts) else []


GATEWAY_JUDGEMENT = "_llama_gateway_judgement"  # what the judge play registered on a gateway that is a fleet host


def gateways_to_configure(hostvars: Mapping, gateways: Sequence[str]) -> list[str]:
    """The gateways to configure before the rollout: those the judge play did not find current (a gateway that is
    not one of the run's fleet hosts has no judgement), in the order given; none for a syntax check."""
    if not isinstance(hostvars, Mapping):
        return []
    hostvars = read_once(hostvars)
    return [name for name in gateways
            if not ((hostvars.get(name) or {}).get(GATEWAY_JUDGEMENT) or {}).get("current", False)]


def gateways_after_rollout(hostvars: Mapping, order: Sequence[str], hosts: Sequence[str],
                           gateways: Sequence[str]) -> list[str]:
    """The gateways to configure again after the rollout: all of them when the rollout had hosts (``order``) or a
    host of the run removes replicas; none when the run changed nothing on any host, since the gateways were
    configured from what runs before the rollout and it still runs (and none for a syntax check)."""
    if not isinstance(hostvars, Mapping):
        return []
    return list(gateways) if list(order or ()) or removal_hosts(hostvars, hosts) else []
