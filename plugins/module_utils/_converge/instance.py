# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The instance step's two entry points: apply one instance (``llama_server_apply``) and judge one instance
(``llama_server_judge``), for either runtime, through the same planning, rendering and readings."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.compose import ComposeRuntime
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.router import plan_router_instance
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step import (
    Outcome,
    Request,
    Runtime,
    plan_instance,
    remove_instance,
    stop_instance,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.systemd import SystemdRuntime
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import router_server_name
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import step_errors
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import (
    early_entry,
    report_entry,
    stopped_entry,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import UNIT_DIR
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.memory import (
    process_memory_mib,
    unit_memory_mib,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import Runner


def request_of(params: Mapping) -> Request:
    """The step's request from the apply module's options (or one instance of the judge's)."""
    return Request(name=params["name"], preset=dict(params.get("preset") or {}), settings=params["settings"],
                   engine=params.get("engine") or "", environment=dict(params.get("environment") or {}),
                   key=str(params.get("api_key") or ""), placement=params.get("placement") or None,
                   router=params.get("router") or None)


def plan_any(request: Request, runtime: Runtime, check_mode: bool):
    """plan_instance, or plan_router_instance for a router instance."""
    if request.router:
        return plan_router_instance(request, runtime, check_mode)
    return plan_instance(request, runtime, check_mode)


def runtime_for(request: Request, run: Runner, docker_run: Runner, *, unit_dir: str = UNIT_DIR,
                image_ids: dict | None = None) -> Runtime:
    if request.compose:
        return ComposeRuntime(request.name, request.settings, request.service_environment, docker_run, image_ids)
    return SystemdRuntime(request.name, request.settings, request.service_environment, run, unit_dir)


def apply(params: Mapping, run: Runner, docker_run: Runner, *, check_mode: bool, diff: bool,
          unit_dir: str = UNIT_DIR) -> Outcome:
    """The whole step for one instance: remove it (state absent), stop it (state stopped), or plan, render, judge
    and apply it."""
    errors = step_errors(params)
    if errors:
        # Before any path is made of its name or any value is read: the module used alone refuses what the role
        # refuses.
        message = "; ".join(errors) + " (nothing was read or changed)"
        return Outcome({"report": early_entry(str(params.get("name")), "failed", message)}, failure=message)
    request = request_of(params)
    runtime = runtime_for(request, run, docker_run, unit_dir=unit_dir)
    if params.get("state") == "absent":
        service_file = request.paths.compose_file if request.compose else runtime.unit_file
        return remove_instance(request, runtime, check_mode, service_file)
    if params.get("state") == "stopped":
        return stop_instance(request, runtime, check_mode)
    step, stopped = plan_any(request, runtime, check_mode)
    if stopped is not None:
        return stopped
    return step.apply(check_mode, diff)


def judge(params: Mapping, run: Runner, docker_run: Runner, *, unit_dir: str = UNIT_DIR,
          image_ids: dict | None = None, seen: dict | None = None) -> tuple[dict | None, str]:
    """(its report row, "") when the instance runs its plan and nothing would change; (None, why) otherwise.
    ``seen`` (when given) receives what the fleet's placement reads of it: the plan's memory estimate, and the
    anonymous memory of the engine that runs now (MiB)."""
    errors = step_errors(params)
    if errors:
        return None, errors[0]
    seen = {} if seen is None else seen
    request = request_of(params)
    name = request.name
    if request.router:
        # What a gateway drains before this router's step: every model (a restart, or a router that cannot be
        # planned); only the ones to reload, once the judgement says it reloads.
        seen["drain"] = [router_server_name(name, str(model["name"])) for model in request.router["models"]]
    runtime = runtime_for(request, run, docker_run, unit_dir=unit_dir, image_ids=image_ids)
    step, stopped = plan_any(request, runtime, check_mode=True)
    seen["memory"] = (step.planned.plan.memory.as_dict() if step is not None
                      else (stopped.result.get("plan") or {}).get("memory") or {})
    if stopped is not None:
        if stopped.failure:
            reason = stopped.failure.removeprefix(f"instance {name}: ").splitlines()[0]
            return None, f"instance {name}: it cannot be deployed as planned ({reason})"
        return stopped.result["report"], ""
    judged = step.judge()
    if request.router and not judged.reasons:
        seen["drain"] = [router_server_name(name, model) for model in getattr(judged, "reload", ())]
    if judged.before.running:
        seen["resident_mib"] = (process_memory_mib(judged.before.main_pid) if request.compose
                                else unit_memory_mib(runtime.service))
    if not judged.settled:
        return None, f"instance {name}: {judged.why_not_settled()}"
    if not judged.last_good_current:
        return None, f"instance {name}: its last verified copy is not what runs"
    observed, state, props = step.observe()
    if observed["health"] != 200:
        return None, f"instance {name}: /health answers {observed['health']}"
    problems = step.verify(state, props)
    if problems:
        return None, f"instance {name}: {problems[0]}"
    applied = {"state": "deployed", "changed": False, "restarted": False, "would_restart": False, "reasons": [],
               "rolled_back": False, **observed}
    return report_entry(name, step.planned, applied, runtime.service), ""


def judge_stopped(name: str, settings: Mapping, run: Runner, docker_run: Runner, *,
                  unit_dir: str = UNIT_DIR) -> tuple[dict | None, str]:
    """(its report row, "") when an instance in state stopped is stopped and stays so at boot; (None, why)
    otherwise."""
    request = Request(name=name, preset={}, settings=settings)
    runtime = runtime_for(request, run, docker_run, unit_dir=unit_dir)
    state = runtime.read()
    if runtime.halted(state):
        return stopped_entry(name, False, runtime.service), ""
    if state.running or state.active_state == "activating":
        return None, f"instance {name} is to be stopped but it runs"
    return None, f"instance {name} is to be stopped but its service starts at boot"
