# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of llama_server_plan: its options checked, the preset's key moved to the masked ``api_key``
option, then the module (plugin_utils/checked_module.py)."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import plan_option_errors
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import (
    PresetLayerError,
    merge_preset,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.checked_module import CheckedModuleAction


def _errors(args) -> list[str]:
    try:
        preset = merge_preset(args.get("preset") or {})
    except PresetLayerError:
        return []  # not a mapping: the module's own argument spec says so
    if args.get("api_key"):
        preset["API_KEY"] = args["api_key"]
    return plan_option_errors(args, preset)


class ActionModule(CheckedModuleAction):
    MODULE = "llamafleet.llamacpp.llama_server_plan"
    errors_of = staticmethod(_errors)
