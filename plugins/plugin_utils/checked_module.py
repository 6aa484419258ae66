# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller side of a module that takes an instance's inputs (llama_server_plan, llama_server_apply): its
options are checked by the rules every entry point follows before anything is sent, and a key given in a preset
travels as the module's masked ``api_key`` option instead.

A module option is logged on the target (its invocation) unless it is ``no_log``; a preset or an environment
cannot be ``no_log`` without masking every value in it. So nothing that may hold a secret leaves the controller
in them: the key moves to ``api_key``, ``EXTERNAL_KEY`` stays behind, and a secret under another name (a misspelt
key, ``LLAMA_API_KEY`` in an environment, a key flag in EXTRA_ARGS) is refused here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.secrets import preset_without_secrets
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.scrub import scrub


def key_apart(args: dict) -> tuple[dict, list[str]]:
    """The options with a preset's API_KEY moved to ``api_key`` (the option wins) and EXTERNAL_KEY dropped; the
    secrets to mask in the result."""
    preset, key = preset_without_secrets(args.get("preset") or {})
    key = str(args.get("api_key") or "") or key
    return {**args, "preset": preset, "api_key": key}, [key]


class CheckedModuleAction(ActionBase):
    """Subclasses name their ``MODULE``, how its options are checked (``errors_of``) and made ready to travel
    (``prepare``: the options and the secrets to mask)."""

    TRANSFERS_FILES = False
    MODULE = ""
    errors_of: Callable[[Mapping], list[str]]
    prepare: Callable[[dict], tuple[dict, list[str]]] = staticmethod(key_apart)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args, secrets = type(self).prepare(dict(self._task.args))
        errors = type(self).errors_of(args)
        if errors:
            # No message names a key (and one too short to be a key could not be masked).
            result.update(failed=True, msg="; ".join(errors) + " (nothing was sent to the host)", errors=errors)
            return result
        found = self._execute_module(module_name=self.MODULE, module_args=args, task_vars=task_vars or {})
        result.update(scrub(found, *secrets))
        return result
