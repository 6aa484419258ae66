# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host judge: does anything of the host's shared parts or of its instances need the role? Changes nothing.

The module ``llama_server_judge`` runs it under Ansible's module runtime; ``judge_entry.py`` runs the very same
function straight from the planning venv (the host action's fast path). Each instance is judged by the instance
step itself (``_converge/instance.py``), for either runtime.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import (
    fleet_readings,
    gateway,
    host,
    instance,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step import Request, plan_of
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (
    LOCK_PATH,
    UNIT_DIR,
    model_marker_dir,
    paths_of,
    unit_path,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import settings_spec
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import (
    KEY_PREFIX,
    NO_CARD,
    placed_instance,
    replica_name,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Card
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import HostReading, PlacedReplica
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import effective_port
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import Runner


def argument_spec() -> dict:
    """The judge's options (the host action's wire format), with the settings table's."""
    return {
        "instances": {"type": "list", "elements": "dict", "default": []},
        "keys": {"type": "dict", "default": {}, "no_log": True},
        "absent": {"type": "list", "elements": "str", "default": []},
        "stopped": {"type": "list", "elements": "str", "default": []},
        "settings": settings_spec(),
        "account": {"type": "dict", "required": True},
        "directories": {"type": "list", "elements": "dict", "default": []},
        "planning_venv": {"type": "dict", "required": True},
        "engine": {"type": "dict", "default": {}},
        "models": {"type": "list", "elements": "dict", "default": []},
        "unit_dir": {"type": "str", "default": UNIT_DIR},
        "lock_path": {"type": "str", "default": LOCK_PATH},
        # The deploy playbook's placement: the fleet's deployments (name, layered preset without key, environment,
        # cards per replica, version); the judge then also reads what the placement needs (fleet_readings).
        "placement": {"type": "dict", "default": None},
        # This host is also one of the fleet's gateways: its paths (gateway.gateway_reading), read in the same run.
        "gateway": {"type": "dict", "default": None},
    }


def shared_problems(params: Mapping, run: Runner, docker_run: Runner) -> tuple[str, list[str], list[str]]:
    """(the engine, what the role would change in the parts every instance shares, the absent instances that are
    still there)."""
    settings = params["settings"]
    compose = settings["runtime"] == "compose"
    why = host.account_problems(params["account"]) + host.directory_problems(params["directories"])
    venv = params["planning_venv"]
    why += [problem for problem in [host.runtime_problem(venv["marker"], venv["manifest"])] if problem]
    engine, problem = "", ""
    # The engine is needed by the instances, and by the placement's estimates.
    needed = bool(params["instances"]) or params.get("placement") is not None
    if compose:
        engine = settings["image_binary"]
        problem = host.image_problem(docker_run, settings) if needed else ""
    elif needed:
        engine, problem = host.engine_binary(params["engine"])
    why += [problem] if problem else []
    why += host.model_problems(params["models"], model_marker_dir(settings["models_dir"]))
    leaving = []
    for name in params["absent"]:
        paths = paths_of(name, settings, settings["compose_dir"] if compose else "")
        left = host.absent_problem(name, paths, "" if compose else unit_path(name, params["unit_dir"]),
                                   (lambda n: host.container_known(docker_run, settings, n)) if compose
                                   else (lambda n: host.unit_known(run, n)))
        if left:
            leaving.append(name)
        why += [left] if left else []
    return engine, why, leaving


def judge(params: Mapping, run: Runner, docker_run: Runner) -> dict:
    """Whether the host runs its plans. ``work`` says which instances the rollout will touch: ``instances`` (by
    name: a present one that will restart or be written, an absent one still there, a stopped one that runs), or
    ``all`` when a part they share (account, runtime, engine, model) is not in place, so that every instance's plan
    may change. With
    ``placement``, the replicas placed here before are judged too (with their deployment's preset), and
    ``placement`` in the result has the host's capacity, those replicas and each deployment's need here."""
    engine, why, leaving = shared_problems(params, run, docker_run)
    shared = len(why) > len(leaving)
    report, work = [], list(leaving)
    # A stopped instance needs none of the shared parts: it is judged on every host.
    for name in params.get("stopped") or []:
        entry, problem = instance.judge_stopped(name, params["settings"], run, docker_run,
                                                unit_dir=params["unit_dir"])
        if problem:
            why.append(problem)
            work.append(name)
        else:
            report.append(entry)
    image_ids: dict = {}
    placing = params.get("placement")
    deployments = {str(d["name"]): d for d in (placing or {}).get("deployments") or []}
    records = fleet_readings.placed_records(params["settings"]["config_dir"]) if placing is not None else []
    listed = {str(item["name"]) for item in params["instances"]}
    replicas = [placed_instance(deployments[record.deployment], record) for record in records
                if record.deployment in deployments and record.instance not in listed]
    seen: dict[str, dict] = {}
    if not shared:
        # The instances are judged only on a host whose shared parts are in place: their plans need them. Every one
        # is judged, so that a gateway drains exactly the ones the rollout will restart.
        for item in [*params["instances"], *replicas]:
            seen[item["name"]] = {}
            entry, problem = instance.judge(
                {**item, "settings": params["settings"], "engine": engine,
                 "api_key": str(params["keys"].get(item["name"]) or params["keys"].get(
                     KEY_PREFIX + str((item.get("placement") or {}).get("deployment", ""))) or "")},
                run, docker_run, unit_dir=params["unit_dir"], image_ids=image_ids, seen=seen[item["name"]])
            if problem:
                why.append(problem)
                work.append(item["name"])
                continue
            report.append(entry)
    result = {"current": not why, "why": why, "report": report if not why else [], "kept": report, "engine": engine,
              "work": {"all": shared, "instances": work}, "lock_holder": host.read_lock(params["lock_path"])}
    # A router instance is drained model by model: each one's gateway servers to drain before its step.
    router_drain = {name: found["drain"] for name, found in seen.items() if "drain" in found}
    if router_drain:
        result["work"]["router_drain"] = router_drain
    if params.get("gateway"):
        result["gateway"] = gateway.gateway_reading(params["gateway"], run)
    if placing is not None:
        result["placement"] = readings(params, records, deployments, seen, engine="" if shared else engine,
                                       failed=set(work)).as_dict()
    return result


def readings(params: Mapping, records: list[PlacedReplica], deployments: Mapping, seen: Mapping, *, engine: str,
             failed: set) -> HostReading:
    """What the controller's placement needs of this host (``fleet_readings``): its capacity, its placed replicas
    (with their plan's memory and whether they run their plan), each deployment's memory need as planned here, and
    whether the host must get its shared parts (engine, runtime, models: ``engine`` is "") to plan them at all."""
    replica_names = {record.instance for record in records}
    placed = []
    for record in records:
        deployment = deployments.get(record.deployment) or {}
        need = fleet_readings.need_of((seen.get(record.instance) or {}).get("memory"), int(deployment.get("gpus") or 0))
        placed.append(replace(record, memory_mib=need.memory_mib, version=str(deployment.get("version") or ""),
                              current=record.instance in seen and record.instance not in failed))
    # What the running engines have reserved and not touched yet (their estimate less their anonymous memory).
    reserved = sum(max(int((entry.get("memory") or {}).get("host_mib") or 0) - int(entry.get("resident_mib") or 0), 0)
                   for entry in seen.values() if "resident_mib" in entry and (entry.get("memory") or {}).get("known"))
    # The ports the hand-placed instances plan, from their presets: known before any of them is judged or runs.
    hand_ports = [port for item in params["instances"] if item["name"] not in replica_names
                  and (port := effective_port(item.get("preset") or {})) is not None]
    capacity = fleet_readings.capacity(reserved_mib=reserved, ports_of_replicas=[r.port for r in records],
                                       planned_ports=hand_ports)
    estimates = {}
    for name, deployment in sorted(deployments.items()):
        mine = [r.instance for r in records if r.deployment == name and r.instance in seen]
        if mine:
            memory = seen[mine[0]].get("memory")
        elif engine:
            memory = estimate_here(params, deployment, engine, capacity.gpus)
        else:
            memory = {"known": False, "why_unknown": "the host is not ready to plan yet (engine, runtime or model)"}
        estimates[name] = fleet_readings.need_of(memory, int(deployment.get("gpus") or 0))
    return HostReading(capacity=capacity, placed=tuple(placed), estimates=estimates,
                       needs_preparing=bool(deployments) and not engine)


def estimate_here(params: Mapping, deployment: Mapping, engine: str, gpus: Sequence[Card]) -> dict:
    """The memory estimate of one replica of ``deployment`` planned on this host (not deployed, nothing written):
    its first cards when it takes cards, none when it takes RAM on a host that has some."""
    count = int(deployment.get("gpus") or 0)
    preset = dict(deployment["preset"])
    if count and len(gpus) < count:
        return {"known": False, "why_unknown": f"the host has {len(gpus)} card(s), a replica takes {count}"}
    if gpus:
        preset["CUDA_VISIBLE_DEVICES"] = ",".join(card.uuid for card in gpus[:count]) if count else NO_CARD
    settings = params["settings"]
    request = Request(name=replica_name(str(deployment["name"]), 0), preset=preset, settings=settings, engine=engine,
                      environment=dict(deployment.get("environment") or {}))
    outcome = plan_of(request, check_mode=True, check_port=False)
    if outcome.failure or outcome.planned is None:
        return {"known": False, "why_unknown": outcome.failure.splitlines()[0]}
    return outcome.planned.plan.memory.as_dict()


def judge_or_why(params: Mapping, run: Runner, docker_run: Runner) -> dict:
    """judge(); a host that cannot be read is not current, and the role's steps say what is wrong."""
    try:
        return judge(params, run, docker_run)
    except (OSError, KeyError, ValueError, TypeError) as err:
        return {"current": False, "why": [f"the host could not be judged: {err}"], "report": [], "kept": [],
                "engine": "", "work": {"all": True, "instances": []}, "lock_holder": {}}


def process_runner(environment: Mapping[str, str] | None = None) -> Runner:
    """Commands run as AnsibleModule.run_command would run them, where there is no AnsibleModule: (rc, out, err)."""
    env = {**os.environ, **(environment or {})}

    def run(argv) -> tuple[int, str, str]:
        try:
            # Not AnsibleModule.run_command: the judge's fast path runs as a plain script from the planning venv,
            # where there is no module (the module llama_server_judge hands its own run_command instead).
            done = subprocess.run(  # pylint: disable=ansible-bad-function
                list(argv), capture_output=True, text=True, errors="surrogateescape", env=env, check=False)
        except OSError as err:
            return 127, "", str(err)
        return done.returncode, done.stdout, done.stderr

    return run
