"""Filter of the llama_server role's compose runtime: one instance's plan as a compose file fragment."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    DEFAULT_HEALTH_COMMAND,
    ComposeError,
    ServiceSpec,
    compose_fragment,
)


def compose_service(plan, *, name, image, user, model_dirs=(), slot_dir="", key_file="", gpus=False,
                    gpu_selection="", environment=None, start_period_s=60, stop_grace_s=30, nofile=0,
                    health_command=None, labels=None) -> dict:
    """The compose mapping (``services`` and ``secrets``) of one instance from its ``llama_server_plan`` result."""
    if (
        not isinstance(plan, Mapping)
        or not isinstance(plan.get("argv"), (list, tuple))
        or not isinstance(plan.get("decisions"), Mapping)
    ):
        raise AnsibleFilterError(
            "compose_service: the input must be a llama_server_plan result (with argv and decisions)"
        )
    spec = ServiceSpec(
        name=str(name),
        image=str(image),
        user=str(user),
        model_dirs=tuple(str(d) for d in (model_dirs or ())),
        slot_dir=str(slot_dir or ""),
        key_file=str(key_file or ""),
        gpus=bool(gpus),
        gpu_selection=str(gpu_selection or ""),
        environment={str(k): "" if v is None else str(v) for k, v in (environment or {}).items()},
        start_period_s=int(start_period_s),
        stop_grace_s=int(stop_grace_s),
        nofile=int(nofile),
        health_command=tuple(str(w) for w in (health_command or DEFAULT_HEALTH_COMMAND)),
        labels={str(k): str(v) for k, v in (labels or {}).items()},
    )
    try:
        return compose_fragment(
            [str(w) for w in plan["argv"]], dict(plan.get("env") or {}), dict(plan["decisions"]), spec
        )
    except ComposeError as err:
        raise AnsibleFilterError(f"compose_service: {err}") from err


class FilterModule:
    def filters(self):
        return {"compose_service": compose_service}
