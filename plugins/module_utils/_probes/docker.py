"""The engine inside a Docker image, and the container that runs an instance.

In the role's compose runtime the engine that will serve is the image's, not
a binary on the host: its ``--help`` decides which flags the plan may use, so
it is read by running the image itself (``docker run --rm IMAGE --help``).
The cache key is the image ID, so re-tagging or pulling a new build reads the
help again, and an unchanged image is never started twice.

The instance's own running container must not count against the plan (its
memory, its port), as the systemd unit does not: ``container_state`` finds it;
probe_memory reads its cgroup through its main process.

Everything here shells out to the docker CLI (the role's hosts have it for
``docker compose``); no Docker SDK is needed. Failures read as "unknown".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    CONTAINER_NO_CONFIG_MOUNTS,
    NO_CONFIG_HOME,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (
    BASE_ENV,
    EngineLauncher,
    engine_variables,
    run_command,
)

INSPECT_TIMEOUT_S = 20.0
# A container start (namespaces, mounts, the image's layers) takes about a
# second on an idle host and several on a loaded one; the engine's own
# --help still answers in milliseconds.
IMAGE_TIMEOUT_SCALE = 6.0

_IMAGE_ID = re.compile(r"^sha256:[0-9a-f]{64}\Z")


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


def image_id(access: DockerAccess, image: str) -> str:
    """The image's content ID (``sha256:...``); "" when the image is not there or docker does not answer."""
    rc, out = run_command(
        [access.cli, "image", "inspect", "--format", "{{.Id}}", image], (), access.env(), INSPECT_TIMEOUT_S
    )
    text = out.strip()
    return text if rc == 0 and _IMAGE_ID.match(text) else ""


def image_launcher(
    access: DockerAccess, image: str, service_env: Mapping[str, str], gpus: bool = False, no_config: bool = False
) -> EngineLauncher:
    """``docker run --rm IMAGE`` with the engine's variables, without network; identity = the image ID.

    ``gpus`` adds ``--gpus all`` (what ``--list-devices`` needs; ``--help`` does not):
    the container then sees the host's GPUs, and CUDA_VISIBLE_DEVICES selects among
    them as it will in the service. ``no_config`` keeps every llama.cpp config.ini out, as the
    service does: an empty tmpfs on /etc/llama.cpp and XDG_CONFIG_HOME on an empty /tmp.
    """
    # Only what the binary probe passes too goes into the container.
    engine_vars = engine_variables(service_env)
    found = image_id(access, image)
    identity = {"path": f"image:{image}", "image_id": found, "env": engine_vars} if found else None
    prefix = [access.cli, "run", "--rm", "--network", "none", "--log-driver", "none"]
    if gpus:
        prefix += ["--gpus", "all"]
    if no_config:
        for mount in CONTAINER_NO_CONFIG_MOUNTS:
            prefix += ["--tmpfs", mount]
        prefix += ["--env", f"XDG_CONFIG_HOME={NO_CONFIG_HOME}"]
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
