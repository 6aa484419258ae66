"""A planned instance as the files of its systemd runtime: the unit, its credential files, what goes away.

Pure; the instance action (controller side) calls it with the plan module's result and the role's settings,
then hands the files to ``llama_server_apply`` on the target. Every decision comes from the plan result
(``decisions``, ``env``, ``api_key_via_env``, ``unset_environment``): nothing is re-read from argv or the preset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import NO_CONFIG_HOME
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import (
    UnitSpec,
    credential_path,
    render_unit,
)

GIB = 1 << 30


@dataclass(frozen=True)
class InstanceSettings:
    """The role's settings an instance's files depend on."""

    user: str = "llamafleet"
    group: str = "llamafleet"
    home: str = "/var/lib/llamafleet"
    config_dir: str = "/etc/llamafleet"
    credentials_dir: str = "/etc/llamafleet/credentials"
    nvidia: str = "auto"  # auto: when the plan saw NVIDIA GPUs; else a boolean word
    protect_home: str = "yes"
    restart_sec: int = 5
    stop_timeout_s: int = 30
    limit_nofile: int = 65536
    managed: str = "Ansible managed"


@dataclass(frozen=True)
class InstancePaths:
    home_dir: str
    key_file: str
    env_file: str
    state_file: str


def instance_paths(name: str, settings: InstanceSettings) -> InstancePaths:
    return InstancePaths(
        home_dir=f"{settings.home}/instances/{name}",
        key_file=f"{settings.credentials_dir}/{name}.key",
        env_file=f"{settings.credentials_dir}/{name}.env",
        state_file=f"{settings.config_dir}/instance-{name}.json",
    )


@dataclass(frozen=True)
class RenderedInstance:
    unit_content: str
    # The environment the unit sets (Environment= lines), for comparing with the running engine's.
    environment: dict[str, str]
    # (path, label, holds) of each credential file; holds: "key" (the bare key) or "env" (LLAMA_API_KEY=key).
    credentials: tuple[tuple[str, str, str], ...] = ()
    remove: tuple[str, ...] = ()


def _word_true(word: str) -> bool:
    return str(word).strip().lower() in ("1", "true", "yes", "on")


def uses_nvidia(plan: Mapping, setting: str) -> bool:
    if str(setting).strip().lower() == "auto":
        return bool((plan.get("facts") or {}).get("gpus"))
    return _word_true(setting)


def key_file_for(name: str, has_key: bool) -> str:
    """The --api-key-file the plan module is told about: systemd's credential path, when a key is in effect."""
    return credential_path(name) if has_key else ""


def render_instance(
    name: str,
    plan: Mapping,
    settings: InstanceSettings,
    base_environment: Mapping[str, str],
    has_key: bool,
) -> RenderedInstance:
    """The unit text and credential files of a (non-external) plan result."""
    paths = instance_paths(name, settings)
    decisions = plan["decisions"]
    via_env = bool(plan.get("api_key_via_env"))
    # The plan's variables win over the user's: it already took the user's into account.
    environment = {str(k): "" if v is None else str(v) for k, v in base_environment.items()}
    environment.update({str(k): str(v) for k, v in (plan.get("env") or {}).items()})
    spec = UnitSpec(
        instance=name,
        argv=list(plan["argv"]),
        user=settings.user,
        group=settings.group,
        home_dir=paths.home_dir,
        environment=environment,
        unset_environment=tuple(plan.get("unset_environment") or ()),
        key_file=paths.key_file if has_key and not via_env else "",
        env_file=paths.env_file if has_key and via_env else "",
        slot_dir=str(decisions.get("slot_dir") or ""),
        slot_persist=bool(decisions.get("slot_persist")),
        loopback_only=bool(decisions.get("loopback_only")),
        nvidia=uses_nvidia(plan, settings.nvidia),
        notes=tuple(plan.get("notes") or ()),
        warnings=tuple(plan.get("plan_warnings") or ()),
        stop_timeout_s=settings.stop_timeout_s,
        restart_sec=settings.restart_sec,
        limit_nofile=settings.limit_nofile,
        protect_home=settings.protect_home,
        managed=settings.managed,
    )
    credentials = []
    if has_key:
        # The unit reads the key file through LoadCredential=; an engine without --api-key-file gets the
        # variable from an EnvironmentFile= instead. The key file is kept either way: it is the instance's key.
        credentials.append((paths.key_file, "the API key", "key"))
        if via_env:
            credentials.append((paths.env_file, "the API key environment file", "env"))
    written = {path for path, _label, _holds in credentials}
    remove = tuple(path for path in (paths.key_file, paths.env_file) if path not in written)
    return RenderedInstance(
        unit_content=render_unit(spec),
        environment={**environment, "XDG_CONFIG_HOME": NO_CONFIG_HOME},
        credentials=tuple(credentials),
        remove=remove,
    )


def credential_content(holds: str, key: str) -> str:
    return f"LLAMA_API_KEY={key}\n" if holds == "env" else f"{key}\n"


def health_timeout_s(model_bytes: int, base_s: int, per_gib_s: int) -> int:
    """How long a (re)started instance may take to answer /health 200: grows with the model."""
    return int(base_s + -(-per_gib_s * max(model_bytes, 0) // GIB))


def instance_files(name: str, settings: InstanceSettings, plan_cache_dir: str,
                   unit_dir: str = "/etc/systemd/system") -> list[str]:
    """Everything the role creates for one instance, which state absent removes (and the judge looks for)."""
    paths = instance_paths(name, settings)
    return [
        f"{unit_dir}/llama-server-{name}.service",
        paths.key_file,
        paths.env_file,
        paths.state_file,
        # The unit and credentials last verified healthy (llama_server_apply's rollback).
        f"{settings.config_dir}/last-good/{name}",
        f"{plan_cache_dir}/{name}",
        # Holds the slot directory.
        paths.home_dir,
    ]
