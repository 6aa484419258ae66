# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The instance step of a router instance: one llama-server in router mode, several models loaded on demand.

Each model is planned as any instance is (``plan_of``: the probes, the planner, the engine's own parser on its
argv), then the router's launch is made of those plans (``_planner/router_plan.py``). The router is a systemd
instance like the others (its unit, its key as ``LLAMA_API_KEY`` in a root-only environment file), with one more
managed file: the models file its ``--models-preset`` reads.

What changes what:

* the router's own launch (its argv, environment or unit) restarts it, as any instance;
* a model's section is a reload: the file is written and ``GET /models?reload=1`` makes the router stop the
  children whose section changed; the others keep running. Which models differ is read from the running router's
  ``/v1/models`` (``_judgements/router_change.py``), never from the file on disk;
* the models file differing only where the router already reads the plan is rewritten, and nothing else.

The room ``--models-max`` is chosen in is measured while the router does not run, and kept in its state file while
it runs: its loaded children hold memory that a new reading would not count, and a smaller ``--models-max`` found
that way would restart a router that fits.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.files import read_bytes, write_atomically
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.planning import PlanOutcome
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step import (
    InstanceStep,
    Judgement,
    ManagedFile,
    Outcome,
    Rendered,
    RenderError,
    Request,
    Runtime,
    StepError,
    plan_of,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.props import props_problems
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import early_entry
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.router_change import (
    RouterChange,
    router_change,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.router_models import (
    RouterModel,
    model_differences,
    read_router_models,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.running_state import (
    argv_matches,
    first_difference,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import Expectations
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import (
    FlagTable,
    read_flag_table,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.memory_estimate import (
    DeviceMemory,
    MemoryEstimate,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_types import read_host, read_port
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.router_plan import (
    RouterPlan,
    RouterSettings,
    plan_router,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import get_json, http_get
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_quoting import (
    UnitValueError,
    exec_start,
)

MODELS_LABEL = "the models file"
# How long a reload may take to show the new sections in /v1/models (the engine waits up to 10 s for a child to
# stop), and how long a changed model that was loaded before may take to load again for its /props check.
RELOAD_TIMEOUT_S = 30.0
LOAD_TIMEOUT_S = 300.0
POLL_S = 0.25


# -------------------------------------------------------------------- planning
def room_of(facts: Mapping) -> dict[str, int]:
    """The memory ``--models-max`` is chosen in, per device as the estimates name them: the host's free RAM as the
    plans read it, and each card's free memory in CUDA's order."""
    room = {"host": int(facts.get("ram_avail_mib") or 0)}
    for index, gpu in enumerate(facts.get("gpus") or []):
        room[str(index)] = int(gpu.get("free_mib") or 0)
    return room


def kept_room(state_file: str) -> dict[str, int] | None:
    """The room of the last verified router (its state file), None when it kept none."""
    found = read_bytes(state_file)
    try:
        room = json.loads(found).get("router_room_mib") if found else None
    except (ValueError, AttributeError):
        return None
    if not isinstance(room, dict) or not all(isinstance(v, int) for v in room.values()):
        return None
    return {str(device): mib for device, mib in room.items()}


def _listen(preset: Mapping, table: FlagTable) -> tuple[str, str]:
    host = str(preset.get("HOST") or "").strip() or planner.DEFAULTS["HOST"]
    port = str(preset.get("PORT") or "").strip() or planner.DEFAULTS["PORT"]
    return read_host("HOST", host, table), read_port("PORT", port)


def router_planned(request: Request, router: RouterPlan, models: Mapping[str, Planned], room: Mapping[str, int],
                   first: Planned) -> Planned:
    """The router as the step handles any instance's plan: its argv, environment, notes and where it listens; its
    memory is the worst case of ``--models-max`` models loaded together (what the placement counts)."""
    # The models' --slot-save-path: the instance's slot directory, which the unit makes before the router starts
    # (a child refuses a directory that is not there).
    slot_dirs = [plan.plan.decisions.slot_dir for plan in models.values() if plan.plan.decisions.slot_dir]
    decisions = planner.Decisions(
        host=router.host, port=router.port, listen=router.listen, loopback_only=router.loopback_only,
        health_url=router.health_url, slot_dir=slot_dirs[0] if slot_dirs else "",
        slot_persist=any(plan.plan.decisions.slot_persist for plan in models.values()),
        metrics=any(plan.plan.decisions.metrics for plan in models.values()), expect=Expectations())
    memory = MemoryEstimate(devices=tuple(DeviceMemory(device, model_mib=mib)
                                          for device, mib in sorted(router.models_max.worst_mib.items())), known=True)
    plan = planner.Plan(argv=router.argv, env=router.env, notes=router.notes,
                        warnings=[note for planned in models.values() for note in planned.plan.warnings],
                        api_key_via_env=bool(request.key), decisions=decisions, memory=memory)
    facts = {**first.facts, "model": "", "model_bytes": 0, "router_models": sorted(models),
             "router_room_mib": dict(room)}
    return Planned(plan, facts=facts, exec_start=exec_start(plan.argv), unset_environment=first.unset_environment,
                   preflight={"models": {name: planned.preflight for name, planned in models.items()}},
                   help_text=first.help_text)


def plan_models(request: Request, check_mode: bool) -> tuple[dict[str, Planned], str]:
    """({model: its plan}, "") or ({}, why not): each model planned as an instance of its own would be, on this
    host, its argv through the engine's parser; no port check (the router gives each child its own)."""
    models: dict[str, Planned] = {}
    for model in request.router["models"]:
        outcome: PlanOutcome = plan_of(dataclasses.replace(request, preset=model["preset"], router=None), check_mode,
                                       check_port=False)
        if outcome.failure or outcome.planned is None:
            return {}, f"router model {model['name']}: {outcome.failure}"
        models[str(model["name"])] = outcome.planned
    return models, ""


def plan_router_instance(request: Request, runtime: Runtime, check_mode: bool
                         ) -> tuple[RouterStep | None, Outcome | None]:
    """plan_instance for a router instance: (the step, None) or (None, why it cannot be deployed)."""
    name, service = request.name, runtime.service

    def refused(message: str, plan: Mapping | None = None) -> tuple[None, Outcome]:
        message = f"instance {name}: {message}"
        entry = early_entry(name, "failed", message + " (nothing was changed)", service)
        return None, Outcome({"plan": dict(plan or {}), "report": entry}, failure=message)

    if request.compose:
        return refused("a router instance (models) runs under systemd only; this host's runtime is compose")
    models, why = plan_models(request, check_mode)
    if why:
        return refused(why)
    first = next(iter(models.values()))
    table = read_flag_table(first.help_text)
    running = runtime.read().running
    room = (kept_room(request.paths.state_file) if running else None) or room_of(first.facts)
    router = request.router
    try:
        host, port = _listen(request.preset, table)
        plan = plan_router(
            RouterSettings(instance=name, binary=first.plan.argv[0], host=host, port=port,
                           models_file=request.paths.models_file, models_max=router.get("models_max"),
                           autoload=router.get("autoload", True),
                           sleep_idle_seconds=router.get("sleep_idle_seconds")),
            {model: planned.plan for model, planned in models.items()}, table, room)
        planned = router_planned(request, plan, models, room, first)
    except (PlanError, planner.PresetError) as err:
        return refused(str(err))
    except UnitValueError as err:
        return refused(f"the router's command line cannot be written into a unit: {err}")
    try:
        rendered = runtime.render(planned, request.key)
    except RenderError as err:
        return refused(f"the plan cannot be written into its {runtime.kind} files: {err}", planned.result())
    models_file = ManagedFile(request.paths.models_file, plan.models_file.encode(), 0o644, MODELS_LABEL,
                              comment=";")
    rendered = dataclasses.replace(rendered, files=(*rendered.files, models_file))
    return RouterStep(request, runtime, planned, rendered, router=plan, models=models, table=table), None


# -------------------------------------------------------------------- the step
@dataclasses.dataclass(frozen=True)
class RouterJudgement(Judgement):
    """A router's judgement: an instance's, with the models to reload (their router lists them otherwise than
    planned) and whether its models file is rewritten with no reload (the router already reads the plan)."""

    reload: tuple[str, ...] = ()
    reload_reasons: tuple[str, ...] = ()
    models_file_only: bool = False

    @property
    def settled(self) -> bool:
        return super().settled and not self.reload and not self.models_file_only

    def why_not_settled(self) -> str:
        if not self.reasons and self.reload:
            return "would reload: " + self.reload_reasons[0]
        if not self.reasons and self.models_file_only and not self.comments_only:
            return f"{MODELS_LABEL} differs from the plan where the router already reads the plan (rewritten only)"
        return super().why_not_settled()


class RouterStep(InstanceStep):
    """A router instance's files and engine; restarts for its own launch, reloads for its models."""

    def __init__(self, request: Request, runtime: Runtime, planned: Planned, rendered: Rendered, *,
                 router: RouterPlan, models: Mapping[str, Planned], table: FlagTable):
        super().__init__(request, runtime, planned, rendered)
        self.router = router
        self.models = dict(models)
        self.table = table
        self.load_after_start: tuple[str, ...] = ()
        room = planned.facts.get("router_room_mib") or {}
        state = json.loads(self.state_text)
        self.state_text = (json.dumps({**state, "router_room_mib": dict(room)}, indent=4) + "\n").encode()

    # ---------------------------------------------------------------- readings
    def listed(self) -> dict[str, RouterModel] | None:
        """The running router's /v1/models, None when it gave none."""
        answer = get_json(self._url("/v1/models"), self.health_socket, timeout=5.0, headers=self.headers)
        try:
            return read_router_models(answer) if answer is not None else None
        except ValueError:
            return None

    def _url(self, path: str) -> str:
        return self.health_url.replace("/health", path)

    def model_props(self, model: str, autoload: bool = False) -> dict | None:
        """A model's /props through the router; without autoload an unloaded model answers 400 (None)."""
        query = f"?model={model}" + ("" if autoload else "&autoload=false")
        data = get_json(self._url("/props" + query), self.health_socket, timeout=LOAD_TIMEOUT_S if autoload else 5.0,
                        headers=self.headers)
        return data if isinstance(data, dict) else None

    def judge(self) -> RouterJudgement:
        changed, comments = self._file_differences()
        before = self.runtime.read()
        launch_changed = [label for label in changed if label != MODELS_LABEL]
        reasons = tuple(self.runtime.reasons(before, self.rendered, launch_changed))
        # A router that restarts (or does not run) reads every section anew: nothing to reload.
        change = (router_change((), self.router.options, self.listed(), self.table) if not reasons and before.running
                  else RouterChange())
        return RouterJudgement(
            before=before, changed_files=tuple(changed), comments_only=tuple(comments), reasons=reasons,
            enable=self.runtime.needs_enable(before), home_current=self.home_current(),
            state_current=self.state_current(), last_good_current=self.last_good_current(),
            reload=change.reload, reload_reasons=change.reload_reasons,
            models_file_only=not reasons and MODELS_LABEL in changed and not change.reload)

    def observe(self) -> tuple[dict, object, dict | None]:
        """The router's part of the report: its PID, /health, whether its argv is the plan's, and its models."""
        state = self.runtime.read()
        health, _body = http_get(self.health_url, self.health_socket, timeout=5.0)
        listed = self.listed() if health == 200 else None
        report = {
            "pid": state.main_pid if state.running else 0,
            "health": health,
            "props": None,
            "runs_plan": state.running and argv_matches(state.cmdline, self.rendered.command,
                                                        self.runtime.interpreter_words),
            "unit_state": state.as_dict(),
            "router_models": self.models_rows(listed),
            "router_autoload": bool(self.request.router.get("autoload", True)),
        }
        return report, state, {"listed": listed}

    def models_rows(self, listed: Mapping[str, RouterModel] | None) -> list[dict]:
        rows = []
        for name in sorted(self.models):
            found = (listed or {}).get(name)
            decisions = self.models[name].plan.decisions
            rows.append({"name": name, "status": found.status if found else "not listed",
                         "port": found.port if found else 0, "failed": bool(found and found.failed),
                         "slots": decisions.expect.slots or 1, "metrics": decisions.metrics,
                         "runs_plan": found is not None and not model_differences(
                             found, self.router.options[name], self.table)})
        return rows

    def verify(self, state, props: dict | None) -> list[str]:
        """Where the router is not the plan: its command line, then each model as /v1/models lists it, then the
        /props of each model that runs."""
        problems = []
        if not argv_matches(state.cmdline, self.rendered.command, self.runtime.interpreter_words):
            problems.append("the started router's command line is not the plan's: "
                            + first_difference(state.cmdline, self.rendered.command))
        listed = (props or {}).get("listed")
        if listed is None:
            return [*problems, "the router answered /health but gave no model list (/v1/models)"]
        change = router_change((), self.router.options, listed, self.table)
        problems += [f"/v1/models: {why}" for why in change.reload_reasons]
        for name, found in sorted(listed.items()):
            if found.failed:
                problems.append(f"model {name}: its child exited with code {found.exit_code}")
            elif found.running and name in self.models:
                answer = self.model_props(name)
                if answer is None:
                    problems.append(f"model {name} runs and gave no /props")
                    continue
                expect = self.models[name].plan.decisions.expect.as_dict()
                problems += [f"model {name}: /props: {why}"
                             for why in props_problems(answer, expect)]
        return problems

    # ---------------------------------------------------------------- the step
    def apply(self, check_mode: bool, diff: bool) -> Outcome:
        judged = self.judge()
        if judged.reload and not judged.reasons:
            return self._reload(judged, check_mode)
        if judged.models_file_only and not judged.reasons:
            if check_mode:
                return self._done({**self._result(judged, changed=True), "rewritten": [MODELS_LABEL]}, "previewed")
            return self._rewrite_models_file(judged)
        if judged.reasons and judged.before.running and not check_mode:
            # The models loaded before a restart are loaded again after it, each checked by its /props: the
            # restart leaves the warm set warm, and a model that no longer starts shows now, not at a user's request.
            self.load_after_start = tuple(sorted(name for name, found in (self.listed() or {}).items()
                                                 if found.running and name in self.models))
        outcome = super().apply(check_mode, diff)
        outcome.result.setdefault("reloaded", [])
        return outcome

    def wait(self) -> tuple[int, str]:
        status, why = super().wait()
        for name in self.load_after_start if status == 200 and not why else ():
            if self.model_props(name, autoload=True) is None:
                return status, f"model {name}, loaded before the restart, did not load again"
        return status, why

    def _rewrite_models_file(self, judged: RouterJudgement) -> Outcome:
        """The router reads the plan; its file on disk did not say so (a run stopped after its reload, or a hand
        edit): written again, nothing reloaded."""
        result = self._result(judged, changed=True)
        try:
            self.ensure_home()
            self.write_files((MODELS_LABEL, *judged.comments_only))
            if judged.comments_only:
                self.runtime.written(self.rendered)  # the unit's notes: systemd reads the file again, restarts nothing
            if judged.enable:
                self.runtime.enable()
        except (OSError, StepError) as err:
            return self._failed(result, f"instance {self.name}: {err}")
        result["rewritten"] = [MODELS_LABEL, *judged.comments_only]
        observed = self.observe()[0]
        if observed["health"] == 200 and observed["runs_plan"]:
            self.keep_last_good()
        self.write_state()
        return self._done({**result, **observed}, "deployed")

    def _result(self, judged: RouterJudgement, changed: bool) -> dict:
        return {"instance": self.name, "unit": self.runtime.service, "changed": changed, "restarted": False,
                "would_restart": False, "reasons": [], "rewritten": [], "rolled_back": False,
                "was_running": bool(judged.before.running), "reloaded": list(judged.reload),
                "reload_reasons": list(judged.reload_reasons)}

    def _reload(self, judged: RouterJudgement, check_mode: bool) -> Outcome:
        """Write the models file, have the router read it, and verify: each changed model as /v1/models lists it,
        and, for one that was loaded before, its /props once it loaded again. On failure the last verified file
        goes back, read by the router again."""
        result = self._result(judged, changed=True)
        if check_mode:
            return self._done(result, "previewed")
        was_loaded = {name for name, found in (self.listed() or {}).items() if found.running}
        previous = read_bytes(self.rendered.files[-1].path)
        kept = self.last_good_files().get(self.rendered.files[-1].path, previous)
        why = ""
        try:
            self.ensure_home()
            self.write_files((MODELS_LABEL, *judged.comments_only))
            if judged.comments_only:
                self.runtime.written(self.rendered)  # the unit's notes: systemd reads the file again, restarts nothing
            why = self.reload_and_wait()
            for name in judged.reload:
                # Loaded again now, as it was: a value the parser took and the model refuses shows here, not at a
                # user's first request.
                if (not why and name in was_loaded and name in self.models
                        and self.model_props(name, autoload=True) is None):
                    why = f"model {name} did not load again with its new options"
            if not why:
                observed, state, props = self.observe()
                why = "; ".join(self.verify(state, props))
        except (OSError, StepError) as err:
            why = str(err)
        if not why:
            self.keep_last_good()
            self.write_state()
            return self._done({**result, **observed}, "deployed")
        tail = " — the router reads its last verified models file again"
        try:
            if kept is not None:
                write_atomically(self.rendered.files[-1].path, kept, 0o644)
                self.reload_and_wait(verify=False)
        except (OSError, StepError) as err:
            tail = f" — the rollback did not complete: {err}"
        observed = self.observe()[0]
        result = {**result, **observed, "error": why + tail, "rolled_back": kept is not None}
        message = f"instance {self.name}: {why}{tail}"
        return Outcome(self._row(result, "failed"), failure=message)

    def reload_and_wait(self, verify: bool = True) -> str:
        """GET /models?reload=1, then wait until /v1/models lists the plan (with ``verify``)."""
        status, body = http_get(self._url("/models?reload=1"), self.health_socket, timeout=RELOAD_TIMEOUT_S,
                                headers=self.headers)
        if status != 200:
            raise StepError(f"the router refused to read its models file again (HTTP {status}): "
                            f"{body[:300].decode('utf-8', 'replace')}")
        if not verify:
            return ""
        deadline = time.monotonic() + RELOAD_TIMEOUT_S
        while True:
            change = router_change((), self.router.options, self.listed(), self.table)
            if not change.reload:
                return ""
            if time.monotonic() > deadline:
                return f"after the reload the router still lists: {change.reload_reasons[0]}"
            time.sleep(POLL_S)
