"""The options of llama_server_plan, declared once: each one's argument spec and the ProbeOptions field it fills.

The module builds its argument_spec from this table and its ProbeOptions from the ``copied`` fields; the
module's DOCUMENTATION is held to the same table by a unit test (names, types, defaults, elements), so the
three cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class PlanOption:
    name: str
    spec: Mapping
    # The ProbeOptions field filled with the value as it is; "" = the module derives what the probes get.
    copied: str = ""


PLAN_OPTIONS = (
    PlanOption("preset", {"type": "dict", "default": {}}),
    # The preset's API_KEY travels apart, masked (the controller side moves it here): over the preset's.
    PlanOption("api_key", {"type": "str", "default": "", "no_log": True}),
    PlanOption("preset_file", {"type": "path"}),
    PlanOption("bin", {"type": "path"}),
    PlanOption("home", {"type": "path", "default": "/var/lib/llamafleet"}, "home"),
    PlanOption("model_dirs", {"type": "list", "elements": "path", "default": []}, "model_dirs"),
    PlanOption("environment", {"type": "dict", "default": {}}),
    PlanOption("api_key_file", {"type": "str", "default": ""}, "api_key_file"),
    PlanOption("engine_official", {"type": "bool", "default": False}, "engine_official"),
    PlanOption("instance", {"type": "str", "default": ""}, "instance"),
    PlanOption("unit", {"type": "str", "default": ""}),
    PlanOption("slot_dir", {"type": "path"}),
    PlanOption("cache_dir", {"type": "path"}),
    PlanOption("stable_ram_avail_mib", {"type": "int", "default": 0}),
    PlanOption("state_file", {"type": "path"}),
    PlanOption("spec_auto_blocked", {"type": "str", "default": ""}, "spec_auto_blocked"),
    PlanOption("check_port", {"type": "bool", "default": True}),
    PlanOption("fail_on_refusal", {"type": "bool", "default": True}),
    PlanOption("engine_image", {"type": "str", "default": ""}, "engine_image"),
    PlanOption("container", {"type": "str", "default": ""}, "container"),
    PlanOption("docker_cli", {"type": "str", "default": "docker"}),
    PlanOption("docker_host", {"type": "str", "default": ""}),
    PlanOption("preflight", {"type": "bool", "default": True}, "preflight"),
    PlanOption("host_facts", {"type": "dict"}),
)


def argument_spec() -> dict:
    return {option.name: dict(option.spec) for option in PLAN_OPTIONS}


def copied_fields(params: Mapping) -> dict:
    """The ProbeOptions fields the options fill as they are."""
    return {option.copied: params[option.name] for option in PLAN_OPTIONS if option.copied}
