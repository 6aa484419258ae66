# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The instance step: one instance on the target, either runtime, planned, rendered, judged and applied.

This is the one place an instance is deployed. ``llama_server_apply`` runs all of it for the instance action;
``llama_server_judge`` runs its judgement only, for every instance of a host, so "nothing to do" means the same on
both paths and for both runtimes. The runtime (``_converge/systemd.py`` or ``_converge/compose.py``) sits behind a
small interface (``Runtime``): what runs, check and follow a write, (re)start, tell whether it is still starting,
what the engine said, and remove. Everything else is common: the plan, the files and their verified copies, the
restart decision, the health wait, the ``/props`` check, the rollback, the report row.

A change that only touches comment lines of a file (the unit's or compose file's notes) rewrites it and restarts
nothing: what the engine and its manager act on is the same.
"""

from __future__ import annotations

import dataclasses
import grp
import os
import pwd
import shutil
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.files import (
    keep_copies,
    read_bytes,
    read_copies,
    write_atomically,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.planning import (
    IMAGE_DEFAULT_BIN,
    PlanOutcome,
    plan_launch,
    previous_ram_avail,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements import fit_check
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.access import open_server_refusal
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.props import props_problems, props_summary
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import (
    PLAN_REPORT_KEYS,
    absent_entry,
    early_entry,
    report_entry,
    stopped_entry,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.running_state import (
    argv_matches,
    first_difference,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (
    InstancePaths,
    container_name,
    credential_path,
    instance_files,
    paths_of,
    unit_name,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import (
    cards_of,
    placement_record,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.docker import DockerAccess
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import engine_env, run_engine
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import ProbeOptions
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import (
    http_get,
    read_props,
    wait_healthy,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import UnitState
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import SECRET_PATH
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import (
    health_timeout_s,
    state_content,
)

HOME_MODE = 0o700
FIT_HELP_TIMEOUT_S = 10.0
FIT_TIMEOUT_S = 120.0  # it reads the model's header and tensor table, not the weights


class StepError(Exception):
    """A change on the host that did not work (a command, a file); the message says which."""


class RenderError(ValueError):
    """The plan cannot be written into the runtime's files (the message names the value)."""


@dataclass(frozen=True)
class ManagedFile:
    """A file the step owns: written atomically, owned by root, readable by ``group`` when one is named."""

    path: str
    content: bytes
    mode: int
    label: str  # how the report names it: "the unit file", "the API key", ...
    group: str = ""
    # The comment marker of its format: a difference in comment lines alone restarts nothing. "" = every byte counts.
    comment: str = ""

    def significant(self, data: bytes | None) -> bytes | None:
        if data is None or not self.comment:
            return data
        marker = self.comment.encode()
        return b"\n".join(line for line in data.split(b"\n") if not line.lstrip().startswith(marker))


@dataclass(frozen=True)
class Rendered:
    """What a runtime makes of a plan: its files (the service's own first), the files it no longer uses, and what
    the running engine must show (its command as the runtime reports it, and its environment)."""

    files: tuple[ManagedFile, ...]
    remove: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)


class Runtime(Protocol):
    """What the step needs of a runtime; systemd and compose each implement it."""

    kind: str  # "systemd" or "compose"
    service: str  # what the report names: the unit, or the container
    interpreter_words: int  # words that may stand before the planned command in what runs
    restored_words: str  # what a rollback restored, for its message

    def log_title(self, lines: int) -> str:
        """The heading of ``engine_says`` in a failure message."""

    def render(self, planned: Planned, key: str) -> Rendered:
        """The files and the command of one instance; RenderError when a value cannot be written."""

    def read(self) -> UnitState:
        """What runs now."""

    def reasons(self, state: UnitState, rendered: Rendered, changed: Sequence[str]) -> list[str]:
        """Why what runs is not what was rendered (empty: it is)."""

    def needs_enable(self, state: UnitState) -> bool:
        """Whether the service would not come back after a reboot."""

    def check(self, rendered: Rendered) -> None:
        """The runtime's own parser on the new files; StepError."""

    def written(self, rendered: Rendered) -> None:
        """After files were written without a restart."""

    def start(self, rendered: Rendered, reset: bool, files_only: bool = False) -> bool:
        """(Re)start or recreate; StepError. Returns whether the engine was restarted.

        ``files_only``: the service's own file is all that changed, which a runtime that tells its meaning from its
        text (compose) may find unchanged."""

    def enable(self) -> None:
        """Start the service at boot."""

    def still_starting(self) -> bool:
        """Whether the manager still counts the service as starting."""

    def engine_says(self, since: float, lines: int) -> list[str]:
        """The engine's last log lines since a time."""

    def halted(self, state: UnitState) -> bool:
        """Whether the service is stopped and stays so at boot (state stopped)."""

    def halt(self) -> None:
        """Stop the service and keep it from starting at boot; its files stay (state stopped). StepError."""

    def remove(self) -> bool:
        """Stop the service before its files go; whether it did anything."""

    def forget(self) -> None:
        """After its files are gone."""


@dataclass(frozen=True)
class Judgement:
    """What applying the instance now would do, from one reading of its files and of what runs."""

    before: UnitState
    changed_files: tuple[str, ...]  # labels of files whose content the engine or its manager acts on differs
    comments_only: tuple[str, ...]  # labels of files whose comment lines alone differ
    reasons: tuple[str, ...]  # why the engine must restart; () = it may keep running
    enable: bool  # the unit is not enabled yet (systemd)
    home_current: bool
    state_current: bool
    last_good_current: bool

    @property
    def settled(self) -> bool:
        """Nothing to write, enable or restart (the engine's health is judged apart)."""
        return (not (self.reasons or self.enable or self.comments_only) and self.home_current
                and self.state_current)

    def why_not_settled(self) -> str:
        if self.reasons:
            return "would restart: " + self.reasons[0]
        if self.comments_only:
            return f"{self.comments_only[0]} differs in its comments only (rewritten without a restart)"
        if self.enable:
            return "its unit is not enabled"
        if not self.home_current:
            return "its home directory is missing or has another owner or mode"
        if not self.state_current:
            return "its planning state file differs"
        return ""


@dataclass
class Outcome:
    """The module's result fields, and why the step failed ("" when it did not)."""

    result: dict
    failure: str = ""


@dataclass(frozen=True)
class Request:
    """One instance as the step takes it (the ``llama_server_apply`` options; the judge builds the same)."""

    name: str
    preset: Mapping[str, str]
    settings: Mapping
    engine: str = ""
    environment: Mapping[str, str] = field(default_factory=dict)  # the instance's own, over the settings'
    key: str = ""
    # A placed replica's record (deployment, replica, port, cuda_visible_devices), kept in its state file, and the
    # margins its host keeps free (ram_margin_mib, gpu_margin_mib) for the engine's own estimate; None: placed by hand.
    placement: Mapping | None = None
    # A router instance (``_converge/router.py``): its models ({name, preset} each, the preset layered without a
    # key) and its own flags (models_max, autoload, sleep_idle_seconds); None for an instance of one model.
    router: Mapping | None = None

    @property
    def record(self) -> dict | None:
        """What the state file keeps of the placement (the margins are the rollout's, not the replica's)."""
        if not self.placement:
            return None
        return placement_record(self.placement, self.placement.get("port"), self.placement.get("cuda_visible_devices"))

    @property
    def paths(self) -> InstancePaths:
        return paths_of(self.name, self.settings, self.settings["compose_dir"] if self.compose else "")

    @property
    def compose(self) -> bool:
        return self.settings["runtime"] == "compose"

    @property
    def service_environment(self) -> dict[str, str]:
        merged = {**(self.settings.get("environment") or {}), **(self.environment or {})}
        return {str(k): "" if v is None else str(v) for k, v in merged.items()}


class InstanceStep:
    """One instance's plan, files and engine, as the step sees and changes them."""

    def __init__(self, request: Request, runtime: Runtime, planned: Planned, rendered: Rendered):
        self.request = request
        self.runtime = runtime
        self.planned = planned
        self.rendered = rendered
        self.name = request.name
        self.paths = request.paths
        decisions = planned.plan.decisions
        self.health_url = decisions.health_url
        self.health_socket = decisions.health_unix_socket
        self.expect = decisions.expect.as_dict()
        self.headers = {"Authorization": f"Bearer {request.key}"} if request.key else {}
        self.state_text = state_content(planned.facts, request.record).encode()
        self.remove_paths = [path for path in rendered.remove if os.path.lexists(path)]

    # ---------------------------------------------------------------- readings
    def _file_differences(self) -> tuple[list[str], list[str]]:
        changed, comments = [], []
        for managed in self.rendered.files:
            found = read_bytes(managed.path)
            if found == managed.content:
                continue
            if managed.significant(found) == managed.significant(managed.content):
                comments.append(managed.label)
            else:
                changed.append(managed.label)
        return changed + [f"{path} (no longer used)" for path in self.remove_paths], comments

    def home_current(self) -> bool:
        """The instance's home exists as the step leaves it: a directory of the service account, mode 0700."""
        try:
            found = os.stat(self.paths.home_dir)
            uid, gid = _ids(self.request.settings)
        except (OSError, KeyError):
            return False
        return (stat.S_ISDIR(found.st_mode) and (found.st_uid, found.st_gid) == (uid, gid)
                and stat.S_IMODE(found.st_mode) == HOME_MODE)

    def state_current(self) -> bool:
        return read_bytes(self.paths.state_file) == self.state_text

    def last_good_files(self) -> dict[str, bytes]:
        """{original path: content} of the last verified deployment; {} when there is none."""
        found = read_copies(self.paths.last_good)
        return found if self.rendered.files[0].path in found else {}

    def last_good_current(self) -> bool:
        return self.last_good_files() == {f.path: f.content for f in self.rendered.files}

    def judge(self) -> Judgement:
        changed, comments = self._file_differences()
        before = self.runtime.read()
        return Judgement(
            before=before,
            changed_files=tuple(changed),
            comments_only=tuple(comments),
            reasons=tuple(self.runtime.reasons(before, self.rendered, changed)),
            enable=self.runtime.needs_enable(before),
            home_current=self.home_current(),
            state_current=self.state_current(),
            last_good_current=self.last_good_current(),
        )

    def observe(self) -> tuple[dict, UnitState, dict | None]:
        """One reading of what runs: the report's part of it, the engine's state, and /props (None: none given)."""
        state = self.runtime.read()
        health, _body = http_get(self.health_url, self.health_socket, timeout=5.0)
        props = read_props(self.health_url, self.health_socket, headers=self.headers) if health == 200 else None
        report = {
            "pid": state.main_pid if state.running else 0,
            "health": health,
            "props": props_summary(props),
            "runs_plan": state.running and argv_matches(state.cmdline, self.rendered.command,
                                                        self.runtime.interpreter_words),
            "unit_state": state.as_dict(),
        }
        return report, state, props

    def verify(self, state: UnitState, props: dict | None) -> list[str]:
        """Where the engine is not the plan: its command line, then /props."""
        problems = []
        if not argv_matches(state.cmdline, self.rendered.command, self.runtime.interpreter_words):
            problems.append("the started engine's command line is not the plan's: "
                            + first_difference(state.cmdline, self.rendered.command))
        if props is None:
            problems.append("the engine answered /health but gave no /props")
        else:
            problems += [f"/props: {problem}" for problem in props_problems(props, self.expect)]
        return problems

    def diff(self) -> dict:
        service_file = self.rendered.files[0]
        before = read_bytes(service_file.path)
        return {"before_header": service_file.path, "after_header": service_file.path,
                "before": before.decode("utf-8", "replace") if before is not None else "",
                "after": service_file.content.decode("utf-8", "replace")}

    # ---------------------------------------------------------------- changes
    def write_files(self, labels: Sequence[str] | None = None) -> None:
        """Write the files that differ (only those with these labels, when given); remove the unused ones."""
        for managed in self.rendered.files:
            if (labels is None or managed.label in labels) and read_bytes(managed.path) != managed.content:
                _write(managed.path, managed.content, managed.mode, managed.group)
        if labels is None:
            for path in self.remove_paths:
                os.unlink(path)

    def ensure_home(self) -> bool:
        return _ensure_dir(self.paths.home_dir, self.request.settings)

    def write_state(self) -> bool:
        if self.state_current():
            return False
        write_atomically(self.paths.state_file, self.state_text, 0o644)
        return True

    def keep_last_good(self) -> None:
        """Copy what now runs healthy, so a later failure (even after an interrupted run) can go back to it."""
        keep_copies(self.paths.last_good, [(f.path, f.content, f.mode) for f in self.rendered.files])

    def on_disk(self) -> dict[str, bytes]:
        """The instance's files as they are now (the rollback when no verified copy exists yet)."""
        paths = [f.path for f in self.rendered.files] + self.remove_paths
        found = {path: read_bytes(path) for path in paths}
        return {path: content for path, content in found.items() if content is not None}

    def restore(self, previous: Mapping[str, bytes]) -> None:
        by_path = {f.path: f for f in self.rendered.files}
        for path, content in previous.items():
            managed = by_path.get(path)
            _write(path, content, managed.mode if managed else 0o600, managed.group if managed else "")
        for managed in self.rendered.files:
            if managed.path not in previous and os.path.lexists(managed.path):
                os.unlink(managed.path)

    def wait(self) -> tuple[int, str]:
        settings = self.request.settings
        return wait_healthy(
            self.health_url,
            self.health_socket,
            timeout_s=health_timeout_s(self.planned.model_bytes, settings["health_timeout_base_s"],
                                       settings["health_timeout_per_gib_s"]),
            listen_timeout_s=settings["health_listen_timeout_s"],
            delay_s=settings["health_delay_s"],
            still_starting=self.runtime.still_starting,
        )

    def remove_new(self) -> None:
        """Take away a new instance that never worked: its service, files, state and verified copy."""
        self.runtime.remove()
        remove_paths([f.path for f in self.rendered.files] + [self.paths.state_file, self.paths.last_good])
        self.runtime.forget()

    # ---------------------------------------------------------------- the step
    def apply(self, check_mode: bool, diff: bool) -> Outcome:
        judged = self.judge()
        result = {
            "instance": self.name,
            "unit": self.runtime.service,
            "changed": bool(judged.reasons or judged.enable or judged.comments_only),
            "restarted": False,
            "would_restart": bool(judged.reasons),
            "reasons": list(judged.reasons),
            "rewritten": [] if judged.reasons else list(judged.comments_only),
            "rolled_back": False,
            # Whether an engine ran before this step: a start is then a restart (the summary tells them apart).
            "was_running": bool(judged.before.running),
        }
        if diff and (judged.changed_files or judged.comments_only) and self.rendered.files[0].label in (
                *judged.changed_files, *judged.comments_only):
            result["diff"] = self.diff()
        if check_mode:
            return self._done(result, "previewed")
        try:
            result["changed"] |= self.ensure_home()
            if not judged.reasons:
                if judged.comments_only:
                    self.write_files(judged.comments_only)
                    self.runtime.written(self.rendered)
                if judged.enable:
                    self.runtime.enable()
                observed = self.observe()[0]
                if observed["health"] == 200 and observed["runs_plan"]:
                    self.keep_last_good()
                result["changed"] |= self.write_state()
                return self._done({**result, **observed}, "deployed")
        except (OSError, StepError) as err:
            return self._failed(result, f"instance {self.name}: {err}")
        return self._deploy(judged, result)

    def _deploy(self, judged: Judgement, result: dict) -> Outcome:
        """Write, restart, wait, verify; on any failure go back to the last verified files (or remove a new one)."""
        before = judged.before
        previous = self.last_good_files() or (self.on_disk() if before.running else {})
        files_only = judged.reasons == (f"{self.rendered.files[0].label} changed",)
        refusal = "" if before.running else engine_fit_refusal(self.request, self.planned)
        if refusal:
            return self._failed(result, f"instance {self.name}: {refusal} (nothing was changed)")
        try:
            self.runtime.check(self.rendered)
        except StepError as err:
            return self._failed(result, f"instance {self.name}: {err} (nothing was changed)")
        started_at = time.time()
        why = ""
        observed: dict = {}
        try:
            self.write_files()
            restarted = self.runtime.start(self.rendered, reset=before.active_state == "failed"
                                           or before.start_limited or before.n_restarts > 0, files_only=files_only)
            result["restarted"] = restarted
            if not restarted:
                # Its runtime read the new file as the one that runs (a new form of the same service): written,
                # and the engine kept running.
                result.update(would_restart=False, reasons=[], rewritten=list(judged.changed_files))
            status, why = self.wait()
            result["health"] = status
            if not why:
                # One reading serves the check and the report.
                observed, state, props = self.observe()
                why = "; ".join(self.verify(state, props))
        except (OSError, StepError) as err:
            why = str(err)
        if not why:
            self.keep_last_good()
            self.write_state()
            return self._done({**result, **observed, "changed": True}, "deployed")

        engine_says = self.runtime.engine_says(started_at, self.request.settings["journal_lines"])
        outcome = self._roll_back(previous)
        if outcome == "rolled back":
            result["rolled_back"] = True
            tail = f" — {self.runtime.restored_words}"
        elif outcome == "removed":
            tail = " — the new instance was removed"
        else:
            tail = f" — the rollback did not complete: {outcome}"
        lines = [f"instance {self.name}: {why}{tail}"]
        if engine_says:
            lines.append(self.runtime.log_title(len(engine_says)))
            lines += engine_says
        observed = self.observe()[0]
        result = {**result, **observed, "error": why + tail, "engine_says": engine_says, "changed": True}
        return Outcome(self._row(result, "failed"), failure="\n".join(lines))

    def _roll_back(self, previous: Mapping[str, bytes]) -> str:
        try:
            if not previous:
                self.remove_new()
                return "removed"
            self.restore(previous)
            self.runtime.start(self.rendered, reset=True)
            _status, why = self.wait()
            return why or "rolled back"
        except (OSError, StepError) as err:
            return str(err)

    # ---------------------------------------------------------------- results
    def _row(self, result: dict, state: str) -> dict:
        applied = {**result, "state": state}
        return {**applied, "report": report_entry(self.name, self.planned, applied, self.runtime.service),
                "plan": plan_report(self.planned.result())}

    def _done(self, result: dict, state: str) -> Outcome:
        if state == "previewed":
            result = {**result, **self.observe()[0]}
        return Outcome(self._row(result, state))

    def _failed(self, result: dict, message: str) -> Outcome:
        return Outcome(self._row({**result, "error": message}, "failed"), failure=message)


def engine_fit_refusal(request: Request, planned: Planned) -> str:
    """For a placed replica about to start (none of it runs yet): why the engine's own estimate of the planned launch
    does not fit the host's free memory less its margins; "" when it fits, or when there is no estimator next to the
    engine (older builds, an image) to ask."""
    if not request.placement or request.compose or not request.engine:
        return ""
    tool = os.path.join(os.path.dirname(request.engine), fit_check.FIT_PARAMS)
    if not os.access(tool, os.X_OK):
        return ""
    env = engine_env(request.engine, request.service_environment)
    status, help_text = run_engine(tool, ["--help"], env, FIT_HELP_TIMEOUT_S)
    if status != 0:
        return ""
    argv = fit_check.projection_argv(planned.plan.argv, fit_check.help_flags(help_text))
    status, output = run_engine(tool, argv, env, FIT_TIMEOUT_S)
    if status != 0:
        return (f"the engine's own estimator (llama-fit-params) refused the planned arguments (exit {status}): "
                + " ".join(output.strip().splitlines()[-1:]))
    facts = planned.facts
    free = {str(gpu.get("uuid")): int(gpu.get("free_mib", -1)) for gpu in facts.get("gpus") or []}
    visible = cards_of(request.placement.get("cuda_visible_devices") or "")
    return fit_check.fit_refusal(
        fit_check.parse_projection(output),
        ram_free_mib=int(facts.get("ram_avail_measured_mib") or facts.get("ram_avail_mib") or 0),
        ram_margin_mib=int(request.placement["ram_margin_mib"]),
        cards_free_mib=[free.get(uuid, -1) for uuid in visible],
        gpu_margin_mib=int(request.placement["gpu_margin_mib"]))


# -------------------------------------------------------------------- planning and the instance's start
def instance_options(request: Request, check_mode: bool) -> ProbeOptions:
    """What the probes take for this instance, for either runtime. The key stays out: only the path the engine
    reads it from goes in."""
    settings = request.settings
    paths = paths_of(request.name, settings)
    preset = {k: v for k, v in planner.normalize_preset(request.preset).items() if k != "API_KEY"}
    if settings.get("metrics") and not str(preset.get("METRICS", "")).strip():
        preset["METRICS"] = "on"  # the role's switch, for the instances whose preset does not say
    options = ProbeOptions(
        preset=preset,
        bin=request.engine,
        home=paths.home_dir,
        model_dirs=[settings["models_dir"], *settings.get("model_dirs", [])],
        environment=request.service_environment,
        api_key_file=credential_path(request.name) if request.key else "",
        engine_official=settings["engine_official"],
        instance=request.name,
        unit=unit_name(request.name),
        cache_dir=paths.plan_cache,
        write_cache=not check_mode,
        stable_ram_avail_mib=previous_ram_avail(paths.state_file),
    )
    if not request.compose:
        return options
    # The engine's help comes from the image that will run, its own container is neither a port conflict nor used
    # RAM, and the key is read from the compose secret's path.
    image = settings["image"]
    return dataclasses.replace(
        options,
        bin=request.engine or settings["image_binary"] or (IMAGE_DEFAULT_BIN if image else ""),
        unit="" if image else options.unit,
        container=container_name(request.name),
        engine_image=image,
        docker=DockerAccess(cli=settings["docker_cli"], host=settings["docker_host"]),
        api_key_file=SECRET_PATH if request.key else "",
    )


def plan_of(request: Request, check_mode: bool, check_port: bool = True) -> PlanOutcome:
    """The instance's plan on this host, through the one planning request (``_converge/planning.py``)."""
    try:
        options = instance_options(request, check_mode)
    except planner.PresetError as err:
        return PlanOutcome({"changed": False}, failure=str(err))
    return plan_launch(options, check_port=check_port)


def plan_report(result: Mapping) -> dict:
    """What the report keeps of a plan's result fields (the rest stays on the host)."""
    return {key: result.get(key) for key in PLAN_REPORT_KEYS}


def plan_instance(request: Request, runtime: Runtime, check_mode: bool) -> tuple[InstanceStep | None, Outcome | None]:
    """Plan and render the instance: (the step, None), or (None, the outcome of an instance that cannot be deployed:
    a failed plan, an external preset, an open server, a plan its runtime cannot write)."""
    name, service = request.name, runtime.service
    outcome = plan_of(request, check_mode)
    planned = outcome.planned
    if outcome.failure or planned is None:
        message = f"instance {name}: {outcome.failure}"
        entry = early_entry(name, "failed", message + " (nothing was changed)", service)
        return None, Outcome({"plan": outcome.result, "report": entry}, failure=message)
    if planned.plan.external:
        entry = early_entry(name, "external", unit=service)
        entry["notes_count"] = len(planned.plan.notes)
        return None, Outcome({"plan": outcome.result, "report": entry})
    refusal = open_server_refusal(name, planned.plan.decisions, request.key, request.settings["allow_open"])
    if refusal:
        entry = early_entry(name, "failed", refusal + " (nothing was changed)", service)
        return None, Outcome({"plan": outcome.result, "report": entry}, failure=refusal)
    try:
        rendered = runtime.render(planned, request.key)
    except RenderError as err:
        message = f"instance {name}: the plan cannot be written into its {runtime.kind} files: {err}"
        return None, Outcome({"plan": outcome.result, "report": early_entry(name, "failed", message, service)},
                             failure=message)
    return InstanceStep(request, runtime, planned, rendered), None


def remove_instance(request: Request, runtime: Runtime, check_mode: bool, service_file: str) -> Outcome:
    """State absent: stop and forget the service, then remove every file the instance had."""
    files = instance_files(request.paths, service_file)
    present = [path for path in files if os.path.lexists(path)]
    known = runtime.read().loaded
    if check_mode:
        would = bool(present or known)
        return Outcome({"changed": would, "report": absent_entry(request.name, would, runtime.service)})
    try:
        changed = runtime.remove() if known else False
        remove_paths(present)
        if known or present:
            runtime.forget()
    except (OSError, StepError) as err:
        message = f"instance {request.name}: its removal did not complete: {err}"
        return Outcome({"report": early_entry(request.name, "failed", message, runtime.service)}, failure=message)
    changed = bool(present) or changed
    return Outcome({"changed": changed, "report": absent_entry(request.name, changed, runtime.service)})


def stop_instance(request: Request, runtime: Runtime, check_mode: bool) -> Outcome:
    """State stopped: the service stops and does not start at boot; every file stays, so the instance comes back as
    it was once it is present again. Nothing is planned: a stopped instance needs no engine, model or venv."""
    would = not runtime.halted(runtime.read())
    if check_mode or not would:
        return Outcome({"changed": would, "report": stopped_entry(request.name, would, runtime.service)})
    try:
        runtime.halt()
    except (OSError, StepError) as err:
        message = f"instance {request.name}: it could not be stopped: {err}"
        return Outcome({"report": early_entry(request.name, "failed", message, runtime.service)}, failure=message)
    return Outcome({"changed": True, "report": stopped_entry(request.name, True, runtime.service)})


# -------------------------------------------------------------------- small helpers
def remove_paths(paths: Sequence[str]) -> None:
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def _ids(settings: Mapping) -> tuple[int, int]:
    return pwd.getpwnam(settings["user"]).pw_uid, grp.getgrnam(settings["group"]).gr_gid


def _write(path: str, content: bytes, mode: int, group: str) -> None:
    write_atomically(path, content, mode)
    if group and os.geteuid() == 0:
        os.chown(path, 0, grp.getgrnam(group).gr_gid)


def _ensure_dir(path: str, settings: Mapping) -> bool:
    """A directory of the service account, mode 0700; True when it had to be made or fixed."""
    uid, gid = _ids(settings)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        found = None
    if found is not None and (found.st_uid, found.st_gid, stat.S_IMODE(found.st_mode)) == (uid, gid, HOME_MODE):
        return False
    os.makedirs(path, mode=HOME_MODE, exist_ok=True)
    os.chown(path, uid, gid)
    os.chmod(path, HOME_MODE)
    return True
