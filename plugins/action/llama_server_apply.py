# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of llama_server_apply used alone (the instance action calls the module itself, after the same
checks): its options checked, a preset's key moved to ``api_key``, then the module
(plugin_utils/checked_module.py)."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import step_errors
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.checked_module import CheckedModuleAction


class ActionModule(CheckedModuleAction):
    MODULE = "llamafleet.llamacpp.llama_server_apply"
    errors_of = staticmethod(step_errors)
