# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of one llama-server instance: layer its preset, plan it on the target, render, apply.

One task per instance instead of a task list: the plan module probes and plans on the target, the unit is
rendered here in Python, and ``llama_server_apply`` writes it, restarts from the running state, waits,
verifies and rolls back. The result is the instance's report row. The API key never leaves this plugin in a
result: it goes to the apply module's no_log options only, and every string of the result is scrubbed of it.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import early_entry, report_entry
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import (
    PresetLayerError,
    instance_preset,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import container_name
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import (
    PLAN_REPORT_KEYS,
    apply_request,
    open_server_refusal,
    plan_request,
    service_environment,
    unit_settings,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import (
    instance_paths,
    render_instance,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import (
    UnitRenderError,
    unit_name,
)
from ansible_collections.llamafleet.llamacpp.plugins.modules.llama_server_instance import DOCUMENTATION
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.compose_deployment import ComposeDeployment
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.doc_spec import argument_spec
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.scrub import scrub

PLAN_MODULE = "llamafleet.llamacpp.llama_server_plan"
APPLY_MODULE = "llamafleet.llamacpp.llama_server_apply"

# Declared once, in the module stub's documentation.
ARGUMENT_SPEC = argument_spec(DOCUMENTATION)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        instance = args["instance"]
        name = str(instance.get("name") or "")
        key = ""
        try:
            preset = instance_preset(instance, args["presets"])
            key = str(instance.get("api_key") or preset.get("API_KEY") or "").strip()
            outcome = self._instance(name, instance, preset, key, args=args, task_vars=task_vars or {})
        except PresetLayerError as err:
            outcome = {"failed": True, "msg": str(err), "report": early_entry(name, "failed", str(err))}
        result.update(scrub(outcome, key))
        return result

    # ------------------------------------------------------------------------------------------------
    def _module(self, module: str, module_args: dict, task_vars: dict, python: str) -> dict:
        use_vars = dict(task_vars)
        if python:
            use_vars["ansible_python_interpreter"] = python
        found = self._execute_module(module_name=module, module_args=module_args, task_vars=use_vars)
        found.pop("invocation", None)
        return found

    def _not_deployable(self, name: str, plan: dict, key: str, args: dict, unit: str) -> dict | None:
        """The outcome of a plan that cannot be deployed (failed, external, an open server); None when it can."""
        if plan.get("failed"):
            message = f"instance {name}: {plan.get('msg') or 'planning failed'}"
            return {"failed": True, "msg": message, "plan": plan,
                    "report": early_entry(name, "failed", message + " (nothing was changed)", unit)}
        if plan.get("external"):
            entry = early_entry(name, "external", unit=unit)
            entry["notes_count"] = len(plan.get("notes") or [])
            return {"changed": False, "plan": plan, "report": entry}
        refusal = open_server_refusal(name, plan["decisions"], key, args["allow_open"])
        if refusal:
            return {"failed": True, "msg": refusal, "plan": plan,
                    "report": early_entry(name, "failed", refusal + " (nothing was changed)", unit)}
        return None

    def _instance(self, name, instance, preset, key, *, args, task_vars) -> dict:
        if args["pending"]:
            message = f"check mode: {args['pending']}"
            unit = container_name(name) if args["runtime"] == "compose" else unit_name(name)
            return {"changed": True, "report": early_entry(name, "pending", message, unit, changed=True)}
        if args["runtime"] == "compose":
            return ComposeDeployment(self, name, instance, preset, key=key, args=args, task_vars=task_vars).run()
        unit = unit_name(name)
        plan = self._module(PLAN_MODULE, plan_request(name, instance, preset, key, args), task_vars, args["python"])
        stop = self._not_deployable(name, plan, key, args, unit)
        if stop is not None:
            return stop
        settings = unit_settings(args)
        try:
            rendered = render_instance(name, plan, settings, service_environment(args, instance), bool(key))
        except UnitRenderError as err:
            message = f"the planned instance cannot be written into a unit: {err}"
            return {"failed": True, "msg": message, "plan": plan,
                    "report": early_entry(name, "failed", message, unit)}
        applied = self._module(
            APPLY_MODULE, apply_request(name, plan, rendered, instance_paths(name, settings), key=key, settings=args),
            task_vars, args["python"],
        )
        entry = report_entry(name, plan, applied, unit)
        outcome = {
            "changed": bool(applied.get("changed")),
            "plan": {k: plan.get(k) for k in PLAN_REPORT_KEYS},
            "applied": applied,
            "report": entry,
        }
        if "diff" in applied:
            outcome["diff"] = applied["diff"]
        if applied.get("failed"):
            outcome.update(failed=True, msg=applied.get("msg") or f"instance {name}: the deployment failed")
        return outcome
