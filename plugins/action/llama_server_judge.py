# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of llama_server_judge used alone (llama_server_host calls the module itself, after the same
checks): the settings and each instance checked, no key inside a preset (keys travel in the masked ``keys``
option), then the module (plugin_utils/checked_module.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import step_errors
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.secrets import preset_without_secrets
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.settings_check import settings_errors
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.checked_module import CheckedModuleAction


def _prepare(args: dict) -> tuple[dict, list[str]]:
    keys = args.get("keys") if isinstance(args.get("keys"), Mapping) else {}
    return args, [str(key) for key in keys.values() if key]


def _errors(args: Mapping) -> list[str]:
    instances = args.get("instances") or []
    if not isinstance(instances, list) or not all(isinstance(item, Mapping) for item in instances):
        return []  # the module's own argument spec says what is wrong
    settings = args.get("settings") if isinstance(args.get("settings"), Mapping) else {}
    errors = settings_errors(settings)
    for item in instances:
        if preset_without_secrets(item.get("preset") or {})[0] != dict(item.get("preset") or {}):
            errors.append(f"instance {item.get('name')}: a preset travels without API_KEY or EXTERNAL_KEY; give "
                          "the key in the keys option")
        errors += step_errors({**item, "settings": {}})
    return errors


class ActionModule(CheckedModuleAction):
    MODULE = "llamafleet.llamacpp.llama_server_judge"
    errors_of = staticmethod(_errors)
    prepare = staticmethod(_prepare)
