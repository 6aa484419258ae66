# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of one llama-server instance: layer its preset, take its key out, then one module run on the
target (``llama_server_apply``), which plans, renders, applies and verifies it, for either runtime.

The result is the instance's report row. The API key leaves this plugin only as the module's no_log option, and
every string of the result is scrubbed of it.
"""

from __future__ import annotations

import copy

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import instance_errors
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.router import step_inputs
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.settings_check import settings_errors
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import early_entry
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import container_name, unit_name
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import settings_spec
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import placement_record
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import PresetLayerError
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.role_vars import host_margins
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.scrub import scrub
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.target import module_result, venv_python

APPLY_MODULE = "llamafleet.llamacpp.llama_server_apply"
# What the instance action's result carries besides the module's own fields (kept under "applied").
_TOP = ("changed", "report", "plan", "diff", "failed", "msg")

ARGUMENT_SPEC = {
    "instance": {"type": "dict", "required": True},
    "presets": {"type": "dict", "default": {}},
    "engine": {"type": "str", "default": ""},
    "venv": {"type": "str", "default": ""},
    "settings": settings_spec(),
    "pending": {"type": "str", "default": ""},
}


def placement_option(instance: dict, task_vars: dict) -> dict:
    """A placed replica's record for its state file, and its host's margins for the engine's own estimate."""
    record = placement_record(instance["placement"], instance.get("port"), instance.get("cuda_visible_devices"))
    return {**record, **{name: int(value) for name, value in host_margins(task_vars).items()}}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        # A copy: Ansible fills a dict option's default in place, which would change the spec for the next task.
        _validation, args = self.validate_argument_spec(argument_spec=copy.deepcopy(ARGUMENT_SPEC))
        instance = args["instance"]
        name = str(instance.get("name") or "")
        settings = args["settings"]
        service = container_name(name) if settings["runtime"] == "compose" else unit_name(name)
        key = ""
        # The module checks the same again on the target; here nothing unchecked is sent (a key misspelt as a
        # preset key would travel in the preset option, which is logged).
        errors = settings_errors(settings) + instance_errors(instance, args["presets"])
        if errors:
            message = "; ".join(errors) + " (nothing was sent to the host)"
            found = {"failed": True, "msg": message, "report": early_entry(name, "failed", message, service)}
        elif (instance.get("state") or "present") in ("absent", "stopped"):
            # Only the standard library is needed: the host's own interpreter, even where no venv is left.
            found = self._apply({"name": name, "state": instance["state"], "settings": settings}, "", task_vars,
                                service)
        elif args["pending"]:
            found = {"changed": True, "report": early_entry(name, "pending", f"check mode: {args['pending']}",
                                                            service, changed=True)}
        else:
            try:
                preset, key, router = step_inputs(instance, args["presets"])
            except PresetLayerError as err:
                found = {"failed": True, "msg": str(err), "report": early_entry(name, "failed", str(err), service)}
            else:
                module_args = {"name": name, "preset": preset, "environment": instance.get("environment") or {},
                               "api_key": key, "engine": args["engine"], "settings": settings}
                if router is not None:
                    module_args["router"] = router
                if instance.get("placement"):
                    module_args["placement"] = placement_option(instance, task_vars or {})
                found = self._apply(module_args, venv_python(args["venv"]), task_vars, service)
        outcome = {k: found[k] for k in _TOP if k in found}
        outcome["applied"] = {k: v for k, v in found.items() if k not in _TOP}
        outcome.setdefault("changed", False)
        result.update(scrub(outcome, key))
        return result

    def _apply(self, module_args: dict, python: str, task_vars, service: str) -> dict:
        found = module_result(self, APPLY_MODULE, module_args, task_vars or {}, python)
        if "report" not in found:
            # The module did not run its step (it could not start, or crashed): the row says so.
            message = f"instance {module_args['name']}: {found.get('msg') or 'the apply module failed'}"
            found.update(failed=True, msg=message, report=early_entry(module_args["name"], "failed", message,
                                                                      service))
        return found
