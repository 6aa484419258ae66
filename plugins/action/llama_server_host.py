# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of the host judge: check the role's inputs, then judge the host in one module run.

The inputs are checked here, before any host is read. The target runs ``llama_server_judge`` once, under the
planning venv's interpreter; a host without that venv is simply not current. The lock's holder is judged here,
as only the controller can tell whether a holder of its own is still running.
"""

from __future__ import annotations

import time

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.doc_fragments.instance_settings import ModuleDocFragment
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.rollout_lock import (
    expired,
    held_message,
    holder_id,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import instance_preset
from ansible_collections.llamafleet.llamacpp.plugins.modules.llama_server_host import DOCUMENTATION
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.doc_spec import argument_spec, documented_options
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.role_inputs import (
    input_errors,
    instances_in_state,
    model_files,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.rollout_holder import (
    holder_alive,
    this_controller,
    this_rollout,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.scrub import scrub

JUDGE_MODULE = "llamafleet.llamacpp.llama_server_judge"
ARGUMENT_SPEC = argument_spec(DOCUMENTATION)
# The fragment's settings the target needs for each instance (the presets and the interpreter stay here).
SETTINGS = sorted(set(documented_options(ModuleDocFragment.DOCUMENTATION)) - {"presets", "python"})
_INSTANCE_KEYS = ("name", "environment")
NO_RUNTIME = "the planning runtime is not installed yet"


def not_current(*why: str) -> dict:
    return {"changed": False, "current": False, "why": list(why), "report": []}


def interpreter_missing(found: dict) -> bool:
    """The module could not start: the venv's interpreter is not there (rc 127 from the shell)."""
    text = f"{found.get('module_stderr', '')} {found.get('module_stdout', '')} {found.get('msg', '')}"
    return found.get("rc") == 127 or ("No such file or directory" in text and "python" in text)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        errors = input_errors({
            "runtime": args["runtime"], "image": args["image"], "image_pull": args["image_pull"],
            "compose_project": args["compose_project"], "compose_dir": args["compose_dir"],
            "instances": args["instances"], "presets": args["presets"], "environment": args["environment"],
            "engine_bin": args["engine_bin"], "engine_archive_url": args["engine_archive_url"],
            "engine_archive_checksum": args["engine_archive_checksum"], "models": args["models"],
            "models_dir": args["models_dir"],
        })
        if errors:
            result.update(failed=True, msg="; ".join(errors), errors=errors)
            return result
        if args["runtime"] == "compose":
            result.update(not_current("compose instances go through the role's compose steps"))
            return result
        instances, keys = [], {}
        for instance in instances_in_state(args["instances"], "present"):
            preset = instance_preset(instance, args["presets"])
            key = str(instance.get("api_key") or preset.get("API_KEY") or "").strip()
            if key:
                keys[instance["name"]] = key
            instances.append({**{k: instance.get(k) for k in _INSTANCE_KEYS},
                              "preset": {k: v for k, v in preset.items() if k != "API_KEY"}})
        found = self._judge(args, instances, keys, task_vars)
        result.update(scrub(found, *keys.values()))
        return result

    def _judge(self, args: dict, instances: list, keys: dict, task_vars: dict) -> dict:
        module_args = {
            "instances": instances,
            "keys": keys,
            "absent": [str(i["name"]) for i in instances_in_state(args["instances"], "absent")],
            "settings": {**{k: args[k] for k in SETTINGS}, "engine": ""},
            "account": {"user": args["user"], "group": args["group"], "home": args["home"],
                        "shell": args["user_shell"], "comment": args["user_comment"]},
            "directories": args["directories"],
            "runtime": {"marker": args["runtime_marker"], "manifest": args["runtime_manifest"]},
            "engine": {"bin": args["engine_bin"], "marker": f"{args['engine_dir']}/.llamafleet-engine.json",
                       "checksum": args["engine_archive_checksum"]},
            "models": [{"path": m["path"], "checksum": m["checksum"]}
                       for m in model_files(args["models"], args["models_dir"])],
            "models_marker_dir": f"{args['models_dir']}/.llamafleet",
            "unit_dir": args["unit_dir"],
            "lock_path": args["lock_path"],
        }
        use_vars = dict(task_vars)
        if args["python"]:
            use_vars["ansible_python_interpreter"] = args["python"]
        found = self._execute_module(module_name=JUDGE_MODULE, module_args=module_args, task_vars=use_vars)
        found.pop("invocation", None)
        if found.get("failed"):
            if interpreter_missing(found):
                return not_current(NO_RUNTIME)
            return {"failed": True, "msg": f"the host could not be judged: {found.get('msg') or found}"}
        holder = found.pop("lock_holder", None) or {}
        ours = holder_id(holder) == holder_id(this_rollout(task_vars))
        lapsed = expired(holder, args["lock_lease_s"], int(time.time()))
        if holder and not ours and not lapsed and holder_alive(holder, this_controller()):
            return {"failed": True, "msg": held_message(holder, args["lock_path"], args["lock_lease_s"]),
                    "holder": holder, "current": False, "why": ["another rollout holds this host"], "report": []}
        return {"changed": False, "current": bool(found.get("current")), "why": list(found.get("why") or []),
                "report": list(found.get("report") or [])}
