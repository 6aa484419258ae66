# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of the host judge: check the role's inputs, then judge the host in one run on it.

The inputs are checked here, before any host is read. The target runs the judge once, under the planning venv's
interpreter; a host without that venv is simply not current. The judge runs straight from the venv, from a copy of
this collection's module_utils kept there under a digest of its sources (``plugin_utils/target_code.py``,
``_converge/judge_entry.py``): a host with nothing to do then costs neither a module payload to build, send and
compile, nor Ansible's module runtime. Where that copy cannot be used (check mode before it is installed, an
answer it cannot give), the judge runs as the module ``llama_server_judge``, with the same code. The lock's holder
is judged here, as only the controller can tell whether a holder of its own is still running.
"""

from __future__ import annotations

import copy
import json
import shlex
import time

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import gateway_settings
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.role import (
    input_errors,
    instances_in_state,
    model_files,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.router import step_inputs
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.rollout_lock import (
    expired,
    held_message,
    holder_id,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (
    LOCK_LEASE_S,
    LOCK_PATH,
    UNIT_DIR,
    engine_marker,
    runtime_marker,
    service_account,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import settings_spec
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import (
    deployment_errors,
    judge_deployments,
    placement_record,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars, target_code
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.rollout_holder import (
    holder_alive,
    this_controller,
    this_rollout,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.scrub import scrub
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.target import module_result, venv_python
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.templated import templated

JUDGE_MODULE = "llamafleet.llamacpp.llama_server_judge"
GATEWAY_READ_PATHS = ("config_path", "lua_path", "state_file", "admin_socket")
NO_RUNTIME = "the planning runtime is not installed yet"

ARGUMENT_SPEC = {
    "instances": {"type": "list", "elements": "dict", "default": []},
    "presets": {"type": "dict", "default": {}},
    "settings": settings_spec(),
    "engine_bin": {"type": "str", "default": ""},
    "engine_archive_url": {"type": "str", "default": ""},
    "engine_archive_checksum": {"type": "str", "default": ""},
    "engine_dir": {"type": "str", "default": ""},
    "models": {"type": "list", "elements": "dict", "default": []},
    "venv": {"type": "str", "default": ""},
    "runtime_manifest": {"type": "dict", "default": {}},
    "unit_dir": {"type": "str", "default": UNIT_DIR},
    "lock_path": {"type": "str", "default": LOCK_PATH},
    "lock_lease_s": {"type": "int", "default": LOCK_LEASE_S},
    # The deploy playbook's placement (llama_fleet_deployments); None: the fleet places nothing.
    "deployments": {"type": "list", "elements": "raw", "default": None},
    # Without deployments: take them from the host's llama_fleet_deployments (templated here, each string once).
    "place": {"type": "bool", "default": False},
    # This host is also one of the run's gateways: read what the gateway has in the same run (llama_gateway_judge).
    "read_gateway": {"type": "bool", "default": False},
    # The options the task leaves out, from the llama_server role's variables on the host (role_vars.JUDGE_OPTIONS).
    "role_variables": {"type": "bool", "default": False},
}


def judge_item(instance: dict, presets: dict) -> tuple[dict, str]:
    """One present instance as the judge takes it, and its key (which travels apart)."""
    preset, key, router = step_inputs(instance, presets)
    item = {"name": instance["name"], "preset": preset, "environment": instance.get("environment") or {}}
    if router is not None:
        item["router"] = router
    if instance.get("placement"):
        # A placed replica listed by the playbook: judged with the record its state file keeps.
        item["placement"] = placement_record(instance["placement"], instance.get("port"),
                                             instance.get("cuda_visible_devices"))
    return item, key


def not_current(*why: str) -> dict:
    return {"changed": False, "current": False, "why": list(why), "report": [], "kept": [], "engine": "",
            "work": {"all": True, "instances": []}}


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
        args = self._validated()
        strings: dict = {}  # each distinct string of the host's variables templated once, for every read below
        if args["role_variables"]:
            try:
                found = role_vars.judge_options(self._templar, task_vars, strings)
            except KeyError as err:
                result.update(failed=True, msg=f"{err.args[0]} is not defined: role_variables reads the options from "
                                               "the llama_server role's variables (is this task in the role?)")
                return result
            except role_vars.RoleVariableError as err:
                result.update(failed=True, msg=str(err))
                return result
            # Checked as the options given in the task would be; those the task gives win.
            self._task.args = {**found, **self._task.args}
            args = self._validated()
        if args["deployments"] is None and args["place"]:
            deployments = self._fleet_deployments(task_vars, strings)
            if deployments is not None:
                # Checked as the option given in the task would be.
                self._task.args = {**self._task.args, "deployments": deployments}
                args = self._validated()
        settings = args["settings"]
        errors = input_errors({**settings, **{k: args[k] for k in (
            "instances", "presets", "engine_bin", "engine_archive_url", "engine_archive_checksum", "models")}})
        if args["deployments"] is not None:
            errors += deployment_errors(args["deployments"], args["presets"], args["instances"],
                                        listed_as=role_vars.DEPLOYMENTS, hand_listed_as=role_vars.HAND_INSTANCES)
        if errors:
            result.update(failed=True, msg="; ".join(errors), errors=errors)
            return result
        placement, keys = None, {}
        if args["deployments"] is not None:
            deployments, keys = judge_deployments(args["deployments"], args["presets"])
            placement = {"deployments": deployments}
        instances = []
        for instance in instances_in_state(args["instances"], "present"):
            item, key = judge_item(instance, args["presets"])
            if key:
                keys[instance["name"]] = key
            instances.append(item)
        # What the judge reads besides the host's instances: the placement's needs, and the gateway on a gateway host.
        reads = {"placement": placement,
                 "gateway": self._gateway_paths(task_vars, strings) if args["read_gateway"] else None}
        found = self._judge(args, instances, keys, task_vars, {part: value for part, value in reads.items()
                                                               if value is not None})
        result.update(scrub(found, *keys.values()))
        return result

    def _validated(self) -> dict:
        # A copy: Ansible fills a dict option's default in place, which would change the spec for the next task.
        _validation, args = self.validate_argument_spec(argument_spec=copy.deepcopy(ARGUMENT_SPEC))
        return args

    def _fleet_deployments(self, task_vars: dict, strings: dict) -> list | None:
        """The host's llama_fleet_deployments, templated as a task's argument would be, but each distinct string of
        them once: a fleet's list repeats its templates (``{{ ansible_host }}`` in each deployment's settings), and
        Ansible compiles a template each time it meets one, on every host. None when the host has none."""
        raw = task_vars.get(role_vars.DEPLOYMENTS)
        return None if raw is None else templated(self._templar, raw, strings)

    def _gateway_paths(self, task_vars: dict, strings: dict) -> dict | None:
        """The paths the judge reads of this host's gateway, from its settings; None when they are wrong (the gateway
        role says so when it runs: a gateway that is not read is configured as usual)."""
        try:
            raw = role_vars.gateway_variables(self._templar, task_vars, strings, secrets=False)
        except role_vars.RoleVariableError:
            return None
        settings, errors = gateway_settings({**raw, "allow_open": True})  # its keys are not read here
        if errors:
            return None
        return {name: getattr(settings, name) for name in GATEWAY_READ_PATHS}

    def _judge(self, args: dict, instances: list, keys: dict, task_vars: dict, reads: dict) -> dict:
        # The account and directories the role's account step makes of the same settings (one table).
        account = service_account(args["settings"])
        module_args = {
            "instances": instances,
            "keys": keys,
            "absent": [str(i["name"]) for i in instances_in_state(args["instances"], "absent")],
            "stopped": [str(i["name"]) for i in instances_in_state(args["instances"], "stopped")],
            "settings": args["settings"],
            "account": {name: value for name, value in account.items() if name != "directories"},
            "directories": account["directories"],
            "planning_venv": {"marker": runtime_marker(args["venv"]), "manifest": args["runtime_manifest"]},
            "engine": {"bin": args["engine_bin"], "checksum": args["engine_archive_checksum"],
                       "marker": engine_marker(args["engine_dir"]) if args["engine_dir"] else ""},
            "models": [{"path": m["path"], "checksum": m["checksum"]}
                       for m in model_files(args["models"], args["settings"]["models_dir"])],
            "unit_dir": args["unit_dir"],
            "lock_path": args["lock_path"],
        }
        module_args.update(reads)
        found = self._judge_in_venv(args["venv"], module_args) if args["venv"] else None
        if found is None:
            found = module_result(self, JUDGE_MODULE, module_args, task_vars, venv_python(args["venv"]))
        if found.get("failed") and interpreter_missing(found) and "placement" in reads:
            # A host without the planning venv yet: the judge needs only the standard library, and the placement
            # needs this host's capacity; its own interpreter reads them (and says what the role would install).
            found = module_result(self, JUDGE_MODULE, module_args, task_vars, "")
        if found.get("failed"):
            if interpreter_missing(found):
                return not_current(NO_RUNTIME)
            return {"failed": True, "msg": f"the host could not be judged: {found.get('msg') or found}"}
        holder = found.pop("lock_holder", None) or {}
        ours = holder_id(holder) == holder_id(this_rollout(task_vars))
        lapsed = expired(holder, args["lock_lease_s"], int(time.time()))
        if holder and not ours and not lapsed and holder_alive(holder, this_controller()):
            return {"failed": True, "msg": held_message(holder, args["lock_path"], args["lock_lease_s"]),
                    "holder": holder, "current": False, "why": ["another rollout holds this host"], "report": [],
                    "kept": [], "engine": "", "work": {"all": True, "instances": []}}
        work = found.get("work") or {}
        judged = {"changed": False, "current": bool(found.get("current")), "why": list(found.get("why") or []),
                  "report": list(found.get("report") or []), "kept": list(found.get("kept") or []),
                  "engine": str(found.get("engine") or ""),
                  "work": {"all": bool(work.get("all", not found.get("current"))),
                           "instances": list(work.get("instances") or [])}}
        if work.get("router_drain"):
            # A router instance's models to drain (all for a restart, those to reload): fleet_run.restarting_instances.
            judged["work"]["router_drain"] = {str(name): [str(server) for server in servers]
                                              for name, servers in work["router_drain"].items()}
        for part in ("placement", "gateway"):
            if part in found:
                judged[part] = found[part]
        return judged

    # ---------------------------------------------------------------- the fast path
    def _judge_in_venv(self, venv: str, module_args: dict) -> dict | None:
        """The judge's result from the venv's copy of the collection's code; None: use the module instead."""
        code = target_code.code_dir(venv)
        python = shlex.quote(venv_python(venv))
        command = f"{python} -I -c {shlex.quote(target_code.RUN)} {shlex.quote(code)}"
        found = self._run_with_options(command, module_args)
        if found.get("rc") == target_code.MISSING and not self._task.check_mode:
            # This version's code is not there yet: install it (once per version and host), then judge.
            self._install_code(python, code)
            found = self._run_with_options(command, module_args)
        if found.get("rc") == 127:  # no venv: no planning runtime yet
            # With a placement to read, the module reads it with the host's own interpreter instead.
            return None if "placement" in module_args else not_current(NO_RUNTIME) | {"lock_holder": {}}
        if found.get("rc") != 0:
            return None
        try:
            answer = json.loads(found.get("stdout") or "")
        except ValueError:
            return None
        return answer if isinstance(answer, dict) and "current" in answer else None

    def _run_with_options(self, command: str, options: dict) -> dict:
        """The command with the options as JSON on its stdin (pipelining) or in a private temporary file; the
        options hold the keys, which must never be on a command line."""
        data = json.dumps(options)
        if self._is_pipelining_enabled("new"):
            return self._low_level_execute_command(command, in_data=data)
        tmp = self._make_tmp_path()
        try:
            path = self._transfer_data(f"{tmp}/options.json", data)
            return self._low_level_execute_command(f"{command} {shlex.quote(path)}")
        finally:
            self._remove_tmp_path(tmp)

    def _install_code(self, python: str, code: str) -> None:
        tmp = self._make_tmp_path()
        try:
            bundle = self._transfer_data(f"{tmp}/llamafleet-code.zip", target_code.archive())
            self._low_level_execute_command(
                f"{python} -I -c {shlex.quote(target_code.INSTALL)} {shlex.quote(code)} {shlex.quote(bundle)}")
        finally:
            self._remove_tmp_path(tmp)
