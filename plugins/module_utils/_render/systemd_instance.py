"""A planned instance as the files of its systemd runtime: the unit, its credential files, what goes away.

Pure; the instance step calls it with its ``Planned`` (the planner's ``Plan`` and what the probes saw) and the
settings (``_layout/settings.py``). Every decision comes from the plan (``decisions``, ``env``, ``api_key_via_env``)
and the probes (``unset_environment``, the GPUs listed): nothing is re-read from argv or the preset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import paths_of
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import NO_CONFIG_HOME
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import UnitSpec, render_unit

MANAGED = "Ansible managed"


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


def uses_nvidia(planned: Planned, setting: str) -> bool:
    """The NVIDIA device rules (or, for compose, a GPU reservation): ``auto`` when the plan saw NVIDIA GPUs."""
    if str(setting).strip().lower() == "auto":
        return planned.gpus_listed
    return _word_true(setting)


def render_instance(name: str, planned: Planned, settings: Mapping, environment: Mapping[str, str],
                    has_key: bool) -> RenderedInstance:
    """The unit text and credential files of a (non-external) plan; ``environment`` is the service's."""
    paths = paths_of(name, settings)
    plan = planned.plan
    decisions = plan.decisions
    via_env = plan.api_key_via_env
    # The plan's variables win over the user's: it already took the user's into account.
    unit_environment = {str(k): "" if v is None else str(v) for k, v in environment.items()}
    unit_environment.update({str(k): str(v) for k, v in plan.env.items()})
    spec = UnitSpec(
        instance=name,
        argv=list(plan.argv),
        user=settings["user"],
        group=settings["group"],
        home_dir=paths.home_dir,
        environment=unit_environment,
        unset_environment=tuple(planned.unset_environment),
        key_file=paths.key_file if has_key and not via_env else "",
        env_file=paths.env_file if has_key and via_env else "",
        slot_dir=decisions.slot_dir,
        slot_persist=decisions.slot_persist,
        loopback_only=decisions.loopback_only,
        nvidia=uses_nvidia(planned, settings["nvidia"]),
        notes=tuple(plan.notes),
        warnings=tuple(plan.warnings),
        stop_timeout_s=settings["stop_timeout_s"],
        restart_sec=settings["restart_sec"],
        limit_nofile=settings["limit_nofile"],
        protect_home=settings["protect_home"],
        managed=MANAGED,
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
        environment={**unit_environment, "XDG_CONFIG_HOME": NO_CONFIG_HOME},
        credentials=tuple(credentials),
        remove=remove,
    )
