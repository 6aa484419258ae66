"""Filters of the llama_server role: preset layering and what a plan says about the service.

They keep the role's YAML free of argv parsing and case juggling, and are unit-tested.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import preset_layers
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import flag_value
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import CTX_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import NGL_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.prompt_cache import CACHE_RAM_FLAGS


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
    """The role's llama_server_models as files: url, checksum and the path under the models directory.

    The file name is the model's ``name`` when given, else the URL's last path segment (query and fragment cut).
    """
    if isinstance(models, (str, Mapping)) or not isinstance(models, Sequence):
        raise AnsibleFilterError("model_files: llama_server_models must be a list of {url, checksum[, name]}")
    files = []
    for position, model in enumerate(models):
        if not isinstance(model, Mapping) or not model.get("url") or not model.get("checksum"):
            raise AnsibleFilterError(f"model_files: model {position} needs a url and a checksum")
        url = str(model["url"])
        name = str(model.get("name") or posixpath.basename(url.split("?", 1)[0].split("#", 1)[0]))
        if not name or "/" in name or name in (".", ".."):
            raise AnsibleFilterError(f"model_files: model {position} ({url}) gives no usable file name; set its name")
        files.append({"url": url, "checksum": str(model["checksum"]), "path": f"{models_dir}/{name}"})
    return files


def instances_in_state(instances, state: str = "present") -> list:
    """The instances whose ``state`` (default ``present``) is the given one, in their order."""
    if isinstance(instances, (str, Mapping)) or not isinstance(instances, Sequence):
        raise AnsibleFilterError("instances_in_state: the input must be a list of instances")
    selected = []
    for instance in instances:
        if not isinstance(instance, Mapping):
            raise AnsibleFilterError("instances_in_state: every instance must be a mapping")
        if (instance.get("state") or "present") == state:
            selected.append(instance)
    return selected


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
            "instance_preset": instance_preset,
            "instances_in_state": instances_in_state,
            "model_files": model_files,
            "merge_preset": merge_preset,
            "plan_summary": plan_summary,
        }
