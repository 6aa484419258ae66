"""The engine inside a Docker image, and the container that runs an instance.

In the role's compose runtime the engine that will serve is the image's, not
a binary on the host: its ``--help`` decides which flags the plan may use, so
it is read by running the image itself (``docker run --rm IMAGE --help``).
The cache key is the image ID, so re-tagging or pulling a new build reads the
help again, and an unchanged image is never started twice.

The instance's own running container must not count against the plan (its
memory, its port), as the systemd unit does not: ``container_state`` finds it,
and its cgroup is read through its main process.

Everything here shells out to the docker CLI (the role's hosts have it for
``docker compose``); no Docker SDK is needed. Failures read as "unknown".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils.probe_engine import (
    BASE_ENV,
    EngineLauncher,
    engine_variables,
    run_command,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.probe_files import read_root_file
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.probe_memory import parse_memory_stat

INSPECT_TIMEOUT_S = 20.0
# A container start (namespaces, mounts, the image's layers) takes about a
# second on an idle host and several on a loaded one; the engine's own
# --help still answers in milliseconds.
IMAGE_TIMEOUT_SCALE = 6.0

_IMAGE_ID = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class DockerAccess:
    """How to reach the Docker engine: the CLI and, optionally, the daemon socket or URL."""

    cli: str = "docker"
    host: str = ""
    config: str = ""

    def env(self) -> dict[str, str]:
        env = dict(BASE_ENV)
        if self.host:
            env["DOCKER_HOST"] = self.host
        if self.config:
            env["DOCKER_CONFIG"] = self.config
        return env


def container_engine_env(service_env: Mapping[str, str]) -> dict[str, str]:
    """What goes into the probe container: only the variables the binary probe passes too."""
    return engine_variables(service_env)


def image_id(access: DockerAccess, image: str) -> str:
    """The image's content ID (``sha256:...``); "" when the image is not there or docker does not answer."""
    rc, out = run_command(
        [access.cli, "image", "inspect", "--format", "{{.Id}}", image], (), access.env(), INSPECT_TIMEOUT_S
    )
    text = out.strip()
    return text if rc == 0 and _IMAGE_ID.match(text) else ""


def image_launcher(
    access: DockerAccess, image: str, service_env: Mapping[str, str], gpus: bool = False
) -> EngineLauncher:
    """``docker run --rm IMAGE`` with the engine's variables, without network; identity = the image ID.

    ``gpus`` adds ``--gpus all`` (what ``--list-devices`` needs; ``--help`` does not):
    the container then sees the host's GPUs, and CUDA_VISIBLE_DEVICES selects among
    them as it will in the service.
    """
    engine_vars = container_engine_env(service_env)
    found = image_id(access, image)
    identity = {"path": f"image:{image}", "image_id": found, "env": engine_vars} if found else None
    prefix = [access.cli, "run", "--rm", "--network", "none", "--log-driver", "none"]
    if gpus:
        prefix += ["--gpus", "all"]
    for name, value in engine_vars.items():
        prefix += ["--env", f"{name}={value}"]
    # The ID, not the name: the texts are then certainly the identity's.
    prefix.append(found or image)
    return EngineLauncher(
        prefix=tuple(prefix), env=access.env(), identity=identity, timeout_scale=IMAGE_TIMEOUT_SCALE
    )


@dataclass(frozen=True)
class ContainerState:
    """A container's full ID and the host PID of its main process (0 when it is not running)."""

    id: str = ""
    pid: int = 0


def parse_container_state(text: str) -> ContainerState:
    """``docker inspect --format '{{.Id}} {{.State.Pid}}'`` output."""
    parts = text.split()
    if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]{64}", parts[0]) or not parts[1].isdigit():
        return ContainerState()
    return ContainerState(id=parts[0], pid=int(parts[1]))


def container_state(access: DockerAccess, name: str) -> ContainerState:
    """The running state of container ``name``; empty when it does not exist or docker does not answer."""
    if not name:
        return ContainerState()
    rc, out = run_command(
        [access.cli, "container", "inspect", "--format", "{{.Id}} {{.State.Pid}}", "--", name],
        (),
        access.env(),
        INSPECT_TIMEOUT_S,
    )
    return parse_container_state(out) if rc == 0 else ContainerState()


def _cgroup_paths(text: str) -> tuple[str, str]:
    """(unified path, v1 memory-controller path) of a ``/proc/<pid>/cgroup`` text."""
    unified = memory = ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            unified = parts[2].strip()
        elif "memory" in parts[1].split(","):
            memory = parts[2].strip()
    return unified, memory


def _safe_path(path: str) -> bool:
    return path.startswith("/") and ".." not in path.split("/") and "\0" not in path


def process_memory_mib(pid: int, root: str = "/") -> int:
    """Anonymous memory of the cgroup of process ``pid`` (MiB; 0 when unknown).

    The container's share, as ``unit_memory_mib`` reads a unit's: v1 ``total_rss``
    of the memory controller's cgroup, else v2 ``anon``.
    """
    if pid <= 0:
        return 0
    unified, memory = _cgroup_paths(read_root_file(root, f"proc/{pid}/cgroup") or "")
    if memory and _safe_path(memory):
        text = read_root_file(root, f"sys/fs/cgroup/memory{memory}/memory.stat")
        if text is not None:
            return parse_memory_stat(text, "total_rss")
    if unified and _safe_path(unified):
        text = read_root_file(root, f"sys/fs/cgroup{unified}/memory.stat")
        if text is not None:
            return parse_memory_stat(text, "anon")
    return 0
