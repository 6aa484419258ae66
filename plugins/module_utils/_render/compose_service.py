"""One instance as a Compose service: the role's compose runtime, from the same plan as a systemd unit.

Pure: the role gives the plan and what it knows of the host, and writes the
returned mapping as YAML (one file per instance, all files one project per
host). What the systemd unit gets from its own settings the container gets
here: host networking (the planned --host/--port hold as they are), the
model directories read-only at the same paths (the planned paths hold inside),
the slot directory, the key as a secret file, a non-root user, a read-only
root file system, no capabilities, SIGINT to stop (llama-server's graceful
exit), a health check on the real port, and, where the unit would get the
NVIDIA device rules, a reservation of the GPUs the plan chose (the systemd
unit's DeviceAllow=char-nvidia*, the Compose way).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs import grammar
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import CUDA_ORDER, container_name
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    CONTAINER_NO_CONFIG_MOUNTS,
    NO_CONFIG_HOME,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Decisions

# Where the key is mounted: compose puts a secret with a relative target in /run/secrets.
SECRET_TARGET = "llama-api-key"
SECRET_PATH = "/run/secrets/" + SECRET_TARGET
# ggml-org's server images carry curl for their own HEALTHCHECK.
DEFAULT_HEALTH_COMMAND = ("curl", "--fail", "--silent", "--show-error", "--output", "/dev/null", "--max-time", "4")

_SERVICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_USER = re.compile(r"^[0-9]+:[0-9]+\Z")
# What nvidia-container-toolkit accepts as a device: an index (NVML order, i.e. PCI bus order),
# a GPU UUID or a MIG device UUID.
_GPU_ID = re.compile(r"^(?:[0-9]{1,3}|GPU-[0-9A-Fa-f-]{8,}|MIG-[0-9A-Za-z/-]{8,})\Z")


class ComposeError(ValueError):
    """The plan or a setting cannot be written as a compose service (the message names the key)."""


@dataclass(frozen=True)
class ServiceSpec:
    """What the role knows beyond the plan (all host paths are absolute)."""

    name: str
    image: str
    user: str  # "uid:gid" of the service account
    model_dirs: Sequence[str] = ()
    slot_dir: str = ""
    key_file: str = ""  # host file holding the API key; "" = no key
    gpus: bool = False  # reserve NVIDIA GPUs
    gpu_selection: str = ""  # CUDA_VISIBLE_DEVICES of the instance ("" = every GPU)
    environment: Mapping[str, str] = field(default_factory=dict)  # the user's; the plan's wins
    start_period_s: int = 60
    stop_grace_s: int = 30
    nofile: int = 0  # open-files limit; 0 = the Docker daemon's own (what containers inherit)
    health_command: Sequence[str] = DEFAULT_HEALTH_COMMAND
    labels: Mapping[str, str] = field(default_factory=dict)


def escape(value: str) -> str:
    """Compose interpolates ``$NAME`` in every string of the file; ``$$`` is a literal dollar."""
    return str(value).replace("$", "$$")


def secret_name(instance: str) -> str:
    return f"llama-server-{instance}-api-key"


def gpu_reservation(gpus: bool, selection: str) -> list[dict]:
    """The ``deploy.resources.reservations.devices`` list: ``device_ids`` for a selection, else ``count: all``.

    Compose refuses ``count`` and ``device_ids`` together; an instance either names its GPUs
    (CUDA_VISIBLE_DEVICES) or takes every GPU of the host. A selection that hides every GPU
    (``-1``, as CUDA reads it) reserves none. Indices and UUIDs are not mixed: the container's
    numbering of the indexed cards would then depend on where the UUID-named ones sit on the bus.
    """
    if not gpus:
        return []
    ids = [part.strip() for part in selection.split(",")] if selection.strip() else []
    if ids and ids[0] == "-1":
        return []
    if not ids:
        return [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    bad = [part for part in ids if not _GPU_ID.match(part)]
    # "1" and "01" are the same card.
    distinct = {int(part) if part.isdigit() else part for part in ids}
    indexed = sum(part.isdigit() for part in ids)
    if bad or len(distinct) != len(ids) or 0 < indexed < len(ids):
        raise ComposeError(
            f"CUDA_VISIBLE_DEVICES={selection!r} cannot be reserved for a container: give distinct GPU indices or "
            "distinct UUIDs (not both) separated by commas (0,1 or GPU-<uuid>)"
        )
    return [{"driver": "nvidia", "device_ids": ids, "capabilities": ["gpu"]}]


def container_gpu_env(reservation: Sequence[Mapping]) -> dict[str, str | None]:
    """The GPU variables the container gets instead of the host's, for a reservation; None = not set.

    The host's CUDA_VISIBLE_DEVICES says which cards the plan chose and in which order (which card is
    CUDA0, which gets the first --tensor-split share). Inside the container only the reserved cards exist:

    - nothing reserved, or ``count: all``: every card is there as on the host; nothing changes.
    - UUIDs: a UUID names the same card inside, so the selection is kept as it is (and with it its order).
    - indices (nvidia-smi's, i.e. PCI bus order): the toolkit exposes the reserved cards renumbered from 0
      in bus order (with CUDA_DEVICE_ORDER=PCI_BUS_ID, set here, as the plan does for a selection). Host
      numbers would name the wrong cards or none, so each becomes its rank among the reserved ones; an
      ascending selection is then 0..n-1, CUDA's own order, and needs no variable.
    """
    ids = [str(i) for device in reservation for i in device.get("device_ids", ())]
    if not ids:
        return {}
    if not ids[0].isdigit():
        return {"CUDA_VISIBLE_DEVICES": ",".join(ids)}
    on_bus = sorted(ids, key=int)
    ranks = [on_bus.index(i) for i in ids]
    renumbered = None if ranks == sorted(ranks) else ",".join(str(r) for r in ranks)
    return {**CUDA_ORDER, "CUDA_VISIBLE_DEVICES": renumbered}


def health_url(decisions: Decisions) -> str:
    """The URL of /health as seen from inside the container: with host networking, the host's own (the plan's
    address and port)."""
    if decisions.health_unix_socket:
        raise ComposeError(
            f"HOST={decisions.host} is a unix socket: the compose runtime serves on TCP only (host "
            "networking); use an address such as 127.0.0.1"
        )
    url = decisions.health_url
    if not url:
        raise ComposeError("the plan names no health URL (a plan from another version of the collection?)")
    return url


def _check(spec: ServiceSpec) -> None:
    if not _SERVICE_NAME.match(spec.name):
        raise ComposeError(f"instance name {spec.name!r}: expected [A-Za-z0-9][A-Za-z0-9_.-]*, at most 63 characters")
    if not spec.image.strip() or any(c.isspace() for c in spec.image):
        raise ComposeError(f"llama_server_image {spec.image!r}: expected an image reference such as repo/name:tag")
    if not _USER.match(spec.user):
        raise ComposeError(f"container user {spec.user!r}: expected numeric uid:gid")
    for path in (*spec.model_dirs, spec.slot_dir, spec.key_file):
        why = grammar.path_problem(path) if path else ""
        if why:
            raise ComposeError(f"{path!r}: a host path given to the compose runtime: {why}; accepted: "
                               f"{grammar.PATH_FORM}")
    for name in spec.environment:
        if not _ENV_NAME.match(str(name)):
            raise ComposeError(f"environment variable name {name!r}: expected [A-Za-z_][A-Za-z0-9_]*")
    if not spec.health_command:
        raise ComposeError("llama_server_compose_health_command must name a program (e.g. curl)")


def service_environment(spec: ServiceSpec, plan_env: Mapping[str, str], reservation: list[dict]) -> dict[str, str]:
    """The user's variables, then the plan's, then the GPU selection as the container numbers it.

    See container_gpu_env: with ``device_ids`` the host's CUDA_VISIBLE_DEVICES would name the wrong
    cards inside the container (or none).
    """
    env = {str(k): str(v) for k, v in spec.environment.items()}
    env.update({str(k): str(v) for k, v in plan_env.items()})
    for name, value in container_gpu_env(reservation).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def service_environment_no_config(env: Mapping[str, str]) -> dict[str, str]:
    """The container's variables with XDG_CONFIG_HOME on an empty tmpfs: no ~/.config/llama.cpp/config.ini."""
    return {**env, "XDG_CONFIG_HOME": NO_CONFIG_HOME}


def container_environment(spec: ServiceSpec, plan_env: Mapping[str, str]) -> dict[str, str]:
    """Every variable the service sets in its container, as the engine sees it (before compose's escaping)."""
    reservation = gpu_reservation(spec.gpus, spec.gpu_selection)
    return service_environment_no_config(service_environment(spec, plan_env, reservation))


def compose_fragment(argv: Sequence[str], plan_env: Mapping[str, str], decisions: Decisions,
                     spec: ServiceSpec) -> dict:
    """The compose file of one instance: ``services`` (one) and, with a key, ``secrets``.

    ``decisions`` are the plan's: where it listens, its key file; nothing is read back from ``argv``, which
    becomes the command as it is.
    """
    _check(spec)
    if len(argv) < 2:
        raise ComposeError(f"instance {spec.name}: the plan has no command line (an external preset?)")
    reservation = gpu_reservation(spec.gpus, spec.gpu_selection)
    if spec.key_file and decisions.api_key_file != SECRET_PATH:
        raise ComposeError(
            f"instance {spec.name}: the engine must read its key from {SECRET_PATH} (--api-key-file); an engine "
            "without --api-key-file would need the key in the container's environment, which docker inspect shows"
        )
    env = container_environment(spec, plan_env)

    volumes = [
        {"type": "bind", "source": escape(d), "target": escape(d), "read_only": True,
         "bind": {"create_host_path": False}}
        for d in dict.fromkeys(spec.model_dirs)
    ]
    if spec.slot_dir:
        volumes.append({"type": "bind", "source": escape(spec.slot_dir), "target": escape(spec.slot_dir),
                        "bind": {"create_host_path": False}})

    service: dict = {
        "image": escape(spec.image),
        "container_name": container_name(spec.name),
        "command": [escape(word) for word in argv[1:]],
        "user": spec.user,
        "network_mode": "host",
        "restart": "unless-stopped",
        "read_only": True,
        # Empty: no llama.cpp config.ini of the image (/etc/llama.cpp) or of the user (XDG_CONFIG_HOME in /tmp).
        "tmpfs": list(CONTAINER_NO_CONFIG_MOUNTS),
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "stop_signal": "SIGINT",
        "stop_grace_period": f"{int(spec.stop_grace_s)}s",
        "healthcheck": {
            "test": ["CMD", *(escape(word) for word in spec.health_command), escape(health_url(decisions))],
            "interval": "10s",
            "timeout": "5s",
            "retries": 3,
            "start_period": f"{max(int(spec.start_period_s), 1)}s",
        },
        "labels": {escape(k): escape(v) for k, v in {"io.llamafleet.instance": spec.name, **spec.labels}.items()},
    }
    if spec.nofile > 0:
        # Above the daemon's own hard limit the container cannot start (runc: operation not permitted).
        service["ulimits"] = {"nofile": {"soft": int(spec.nofile), "hard": int(spec.nofile)}}
    if env:
        service["environment"] = {k: escape(v) for k, v in sorted(env.items())}
    if volumes:
        service["volumes"] = volumes
    if reservation:
        service["deploy"] = {"resources": {"reservations": {"devices": reservation}}}
    fragment: dict = {"services": {spec.name: service}}
    if spec.key_file:
        service["secrets"] = [{"source": secret_name(spec.name), "target": SECRET_TARGET}]
        fragment["secrets"] = {secret_name(spec.name): {"file": escape(spec.key_file)}}
    return fragment
