"""Filters of the llama_server role: preset layering and what a plan says about the service.

They keep the role's YAML free of argv parsing and case juggling, and are unit-tested.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import preset_layers
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import flag_value
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import CTX_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import NGL_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.prompt_cache import CACHE_RAM_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import InstanceSettings
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import (
    instance_files as instance_files_of,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_inputs


def merge_preset(base, *layers) -> dict:
    """Layer preset mappings, later layers winning; keys upper-cased (preset_layers.merge_preset)."""
    try:
        return preset_layers.merge_preset(base, *layers)
    except preset_layers.PresetLayerError as err:
        raise AnsibleFilterError(str(err)) from err


def instance_preset(instance, presets) -> dict:
    """The preset an instance runs (preset_layers.instance_preset); an API_KEY stays in the result."""
    try:
        return preset_layers.instance_preset(instance, presets)
    except preset_layers.PresetLayerError as err:
        raise AnsibleFilterError(str(err)) from err


def model_files(models, models_dir: str) -> list:
    """The role's llama_server_models as files (role_inputs.model_files): url, checksum and path."""
    try:
        return role_inputs.model_files(models, models_dir)
    except role_inputs.RoleInputError as err:
        raise AnsibleFilterError(str(err)) from err


def instances_in_state(instances, state: str = "present") -> list:
    """The instances whose ``state`` (default ``present``) is the given one (role_inputs.instances_in_state)."""
    try:
        return role_inputs.instances_in_state(instances, state)
    except role_inputs.RoleInputError as err:
        raise AnsibleFilterError(str(err)) from err


def instance_files(name, config_dir: str, credentials_dir: str, plan_cache_dir: str, home: str, *,
                   unit_dir: str = "/etc/systemd/system") -> list:
    """Everything the role creates for one systemd instance (systemd_instance.instance_files)."""
    settings = InstanceSettings(config_dir=config_dir, credentials_dir=credentials_dir, home=home)
    return instance_files_of(str(name), settings, plan_cache_dir, unit_dir)


def plan_summary(plan: Mapping) -> dict:
    """What the fleet report shows of one llama_server_plan result, plus where to check health (the plan's)."""
    if not isinstance(plan, Mapping) or not isinstance(plan.get("decisions"), Mapping):
        raise AnsibleFilterError("plan_summary: the input must be a llama_server_plan result (with decisions)")
    argv = [str(word) for word in plan.get("argv") or []]
    facts = plan.get("facts") or {}
    decisions = plan["decisions"]
    model = str(facts.get("model") or "")
    return {
        "model": posixpath.basename(model),
        "model_path": model,
        "model_bytes": int(facts.get("model_bytes") or 0),
        # As written, the last occurrence winning (the user's EXTRA_ARGS come last), as the engine reads them.
        "ctx": flag_value(argv, *CTX_FLAGS),
        "ngl": flag_value(argv, *NGL_FLAGS),
        "cache_ram": flag_value(argv, *CACHE_RAM_FLAGS),
        "gpus": len(facts.get("gpus") or []),
        "vram_mib": int(facts.get("vram_mib") or 0),
        "ram_mib": int(facts.get("ram_mib") or 0),
        "ram_avail_mib": int(facts.get("ram_avail_mib") or 0),
        "notes_count": len(plan.get("notes") or []),
        "host": str(decisions.get("host") or ""),
        "port": str(decisions.get("port") or ""),
        "loopback_only": bool(decisions.get("loopback_only")),
        "health_url": str(decisions.get("health_url") or ""),
        "health_unix_socket": str(decisions.get("health_unix_socket") or ""),
    }


class FilterModule:
    def filters(self):
        return {
            "instance_files": instance_files,
            "instance_preset": instance_preset,
            "instances_in_state": instances_in_state,
            "model_files": model_files,
            "merge_preset": merge_preset,
            "plan_summary": plan_summary,
        }
