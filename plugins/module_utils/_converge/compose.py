# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compose runtime of the instance step: one service per instance in the host's compose project.

The step drives ``docker compose`` itself, on the target, rather than through ``community.docker``'s
``docker_compose_v2``: that module is a controller-side task of its own, so an instance would take several module
round trips, the host judge could not use it, and the collection would need community.docker on every
controller. Here one module run decides (from ``docker inspect`` of the container: its command, environment,
state and restarts), checks a new file with ``docker compose config``, recreates the one service with ``up
--no-deps --force-recreate`` only when what runs is not the plan (without ``--force-recreate`` when the file's
form is all that changed: compose then keeps a container whose service reads the same), and waits for ``/health``
as the systemd runtime does. Not ``up --wait``: it waits on compose's health check, whose interval and start
period make it coarse, and on failure says only that the container is unhealthy, where the step's own wait gives
the same timeout, the same early exit on a crash and the engine's last log lines under both runtimes. Compose's
own health check stays in the file, for ``docker ps`` and the daemon.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import tempfile
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step import (
    ManagedFile,
    Rendered,
    RenderError,
    StepError,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.running_state import container_reasons
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import container_name, paths_of
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_bytes
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import Runner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import (
    UnitState,
    parse_deleted_maps,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_file import compose_file_text
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    ComposeError,
    ServiceSpec,
    container_environment,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import (
    credential_content,
    health_timeout_s,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import uses_nvidia
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import SLOT_SCRIPT

COMPOSE_LABEL = "the compose file"
KEY_MODE = 0o640  # root, readable by the service group: compose binds it read-only into the container
IMAGE_ID_LABEL = "io.llamafleet.image-id"


def docker_environment(settings: Mapping) -> dict[str, str]:
    """What the docker CLI needs to find the daemon and its compose plugin."""
    found = {"DOCKER_HOST": settings.get("docker_host") or "", "DOCKER_CONFIG": settings.get("docker_config") or ""}
    return {name: value for name, value in found.items() if value}


def container_state(inspected: Mapping | None, maps: str = "") -> UnitState:
    """``docker inspect`` of a container as the step's reading of what runs (None: no such container)."""
    if not inspected:
        return UnitState(load_state="not-found")
    state = inspected.get("State") or {}
    config = inspected.get("Config") or {}
    status = str(state.get("Status") or "")
    if state.get("Restarting"):
        active = "activating"
    elif state.get("Running"):
        active = "active"
    elif status in ("exited", "dead") and (state.get("ExitCode") or status == "dead"):
        active = "failed"
    else:
        active = "inactive"
    environ = {}
    for entry in config.get("Env") or ():
        name, _sep, value = str(entry).partition("=")
        environ[name] = value
    return UnitState(
        load_state="loaded",
        active_state=active,
        sub_state=status,
        result=f"exit code {state.get('ExitCode')}" if active == "failed" else "",
        main_pid=int(state.get("Pid") or 0),
        unit_file_state="enabled",
        n_restarts=int(inspected.get("RestartCount") or 0),
        cmdline=tuple(str(word) for word in config.get("Cmd") or ()),
        environ=environ,
        deleted_maps=parse_deleted_maps(maps),
    )


class ComposeRuntime:
    kind = "compose"
    interpreter_words = 0  # what runs is the container's command, the entrypoint aside
    restored_words = "rolled back to the last verified compose file, whose container is healthy again"

    def __init__(self, name: str, settings: Mapping, environment: Mapping[str, str], run: Runner,
                 image_ids: dict | None = None):
        self.name = name
        self.settings = settings
        self.environment = environment
        self.run = run  # bound to docker_environment(settings)
        self.service = container_name(name)
        self.paths = paths_of(name, settings, settings["compose_dir"])
        self.image_ids = {} if image_ids is None else image_ids
        self._restarts_at_start = 0
        self._slots = ("", False)

    def log_title(self, lines: int) -> str:
        return f"docker logs {self.service} (last {lines} lines):"

    def docker(self, *args: str) -> tuple[int, str, str]:
        return self.run([self.settings["docker_cli"], *args])

    def compose(self, *args: str) -> tuple[int, str, str]:
        return self.docker("compose", "--project-name", self.settings["compose_project"], "--project-directory",
                           self.settings["compose_dir"], *args)

    # ---------------------------------------------------------------- the files
    def image_id(self) -> str:
        image = self.settings["image"]
        if image not in self.image_ids:
            rc, out, err = self.docker("image", "inspect", "--format", "{{.Id}}", image)
            if rc != 0:
                raise RenderError(f"image {image} is not on this host: {(err or out).strip()}")
            self.image_ids[image] = out.strip()
        return self.image_ids[image]

    def render(self, planned: Planned, key: str) -> Rendered:
        settings = self.settings
        plan = planned.plan
        decisions = plan.decisions
        try:
            uid, gid = pwd.getpwnam(settings["user"]).pw_uid, grp.getgrnam(settings["group"]).gr_gid
        except KeyError as err:
            raise RenderError(f"the service account is missing: {err}") from err
        slot_dir = decisions.slot_dir
        self._slots = (slot_dir, decisions.slot_persist)
        spec = ServiceSpec(
            name=self.name, image=settings["image"], user=f"{uid}:{gid}",
            model_dirs=(settings["models_dir"], *settings["model_dirs"]), slot_dir=slot_dir,
            key_file=self.paths.key_file if key else "", gpus=uses_nvidia(planned, settings["nvidia"]),
            gpu_selection=str({**self.environment, **plan.env}.get("CUDA_VISIBLE_DEVICES") or ""),
            environment=dict(self.environment),
            start_period_s=health_timeout_s(planned.model_bytes, settings["health_timeout_base_s"],
                                            settings["health_timeout_per_gib_s"]),
            stop_grace_s=settings["stop_timeout_s"], nofile=settings["compose_nofile"],
            health_command=tuple(settings["compose_health_command"]),
            labels={IMAGE_ID_LABEL: self.image_id()},
        )
        try:
            text = compose_file_text(self.name, plan, spec, settings["compose_project"])
            environment = container_environment(spec, plan.env)
        except ComposeError as err:
            raise RenderError(str(err)) from err
        files = [ManagedFile(self.paths.compose_file, text.encode(), 0o644, COMPOSE_LABEL, comment="#")]
        if key:
            files.append(ManagedFile(self.paths.key_file, credential_content("key", key).encode(), KEY_MODE,
                                     "the API key", group=settings["group"]))
        return Rendered(files=tuple(files), remove=() if key else (self.paths.key_file,),
                        command=tuple(plan.argv[1:]), environment=environment)

    # ---------------------------------------------------------------- what runs
    def inspect(self) -> dict | None:
        rc, out, _err = self.docker("container", "inspect", self.service)
        if rc != 0:
            return None
        try:
            found = json.loads(out or "[]")
        except ValueError:
            return None
        return found[0] if isinstance(found, list) and found and isinstance(found[0], dict) else None

    def read(self) -> UnitState:
        inspected = self.inspect()
        pid = int(((inspected or {}).get("State") or {}).get("Pid") or 0)
        maps = read_bytes(f"/proc/{pid}/maps") if pid > 0 else None
        return container_state(inspected, (maps or b"").decode("utf-8", "surrogateescape"))

    def reasons(self, state: UnitState, rendered: Rendered, changed: Sequence[str]) -> list[str]:
        return container_reasons(state, rendered.command, rendered.environment, changed)

    def needs_enable(self, state: UnitState) -> bool:
        return False  # restart: unless-stopped brings it back with the daemon

    def still_starting(self) -> bool:
        state = self.read()
        return state.running and state.n_restarts == self._restarts_at_start

    def engine_says(self, since: float, lines: int) -> list[str]:
        rc, out, err = self.docker("logs", "--tail", str(int(lines)), self.service)
        return (out + err).splitlines()[-int(lines):] if rc == 0 else []

    # ---------------------------------------------------------------- changes
    def project_files(self) -> list[str]:
        """The project's compose files (one per instance of the host), this one included."""
        directory = self.settings["compose_dir"]
        names = set(os.listdir(directory)) if os.path.isdir(directory) else set()
        names.add(os.path.basename(self.paths.compose_file))
        return sorted(name for name in names if name.endswith(".yaml") and not name.startswith("."))

    def check(self, rendered: Rendered) -> None:
        """``docker compose config`` on a new compose file before it replaces the old one."""
        new = rendered.files[0]
        if read_bytes(new.path) == new.content:
            return
        directory = self.settings["compose_dir"]
        os.makedirs(directory, mode=0o755, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".check-", suffix=".yaml", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(new.content)
            rc, out, err = self.docker("compose", "--project-name", self.settings["compose_project"], "--file",
                                       temporary, "config", "--quiet")
        finally:
            os.unlink(temporary)
        if rc != 0:
            raise StepError(f"docker compose config refused the compose file: {(err or out).strip()}")

    def written(self, rendered: Rendered) -> None:
        """A compose file read again changes nothing until the service is recreated."""

    def enable(self) -> None:
        """Nothing to enable: the restart policy is in the file."""

    def _empty_slots(self) -> None:
        """The unit's ExecStartPre, run as root before the container starts: the slot directory, mode 0700,
        owned by the service account, emptied but for saved states kept by SLOT_PERSIST."""
        slot_dir, persist = self._slots
        if not slot_dir:
            return
        uid, gid = pwd.getpwnam(self.settings["user"]).pw_uid, grp.getgrnam(self.settings["group"]).gr_gid
        os.makedirs(slot_dir, mode=0o700, exist_ok=True)
        os.chown(slot_dir, uid, gid)
        os.chmod(slot_dir, 0o700)
        rc, out, err = self.run(["sh", "-c", SLOT_SCRIPT, "sh", slot_dir, "1" if persist else "0"])
        if rc != 0:
            raise StepError(f"emptying the slot directory failed: {(err or out).strip()}")

    def start(self, rendered: Rendered, reset: bool, files_only: bool = False) -> bool:
        """Recreate the one service. When its compose file is all that changed, compose itself decides: a file of
        another form (an upgrade of the collection writes it anew) whose service is the same recreates nothing."""
        before = (self.inspect() or {}).get("Id")
        if not files_only:
            self._empty_slots()
        directory = self.settings["compose_dir"]
        files = [arg for name in self.project_files() for arg in ("--file", os.path.join(directory, name))]
        force = [] if files_only else ["--force-recreate"]
        rc, out, err = self.compose(*files, "up", "--detach", "--no-deps", *force, "--pull", "never", self.name)
        if rc != 0:
            said = [line.strip() for line in (err or out).splitlines() if line.strip()]
            raise StepError(f"docker compose up: {said[-1] if said else f'exit code {rc}'}")
        after = self.inspect() or {}
        self._restarts_at_start = int(after.get("RestartCount") or 0)
        return after.get("Id") != before

    def halted(self, state: UnitState) -> bool:
        return not state.running and state.active_state != "activating"

    def halt(self) -> None:
        """Stopped by hand, the container is not brought back by its restart policy (unless-stopped), nor by the
        daemon's restart; it is kept, with its files."""
        rc, out, err = self.docker("stop", "--time", str(int(self.settings["stop_timeout_s"])), self.service)
        if rc != 0 and "No such container" not in err:
            raise StepError(f"docker stop {self.service}: {(err or out).strip()}")

    def remove(self) -> bool:
        """Stop the container (its stop signal and grace period) and remove it."""
        self.docker("stop", "--time", str(int(self.settings["stop_timeout_s"])), self.service)
        rc, out, err = self.docker("rm", "--force", self.service)
        if rc != 0 and "No such container" not in err:
            raise StepError(f"docker rm {self.service}: {(err or out).strip()}")
        return True

    def forget(self) -> None:
        """Nothing outside its files remembers a removed container."""
