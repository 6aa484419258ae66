# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's Prometheus ``file_sd`` targets, written on the controller from the hosts' reports of this run.

What goes in is decided in _gateway/scrape_targets.py; this reads the hosts' variables, keeps the file's groups of
the hosts this run did not reach, and writes atomically, only when the content differs (not in check mode: the
file is what a Prometheus reads).
"""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import scrape_targets
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import preset_layers
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import write_atomically
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_run, role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.targets_file import TargetsFileError, read_targets

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "inventory_hosts": {"type": "list", "elements": "str"},
    "gateways": {"type": "list", "elements": "str", "default": []},
    "path": {"type": "str", "required": True},
    "validate_only": {"type": "bool", "default": False},
}


def instance_presets(variables) -> dict:
    """Each present instance's preset name and version (preset_layers.preset_version), by instance name."""
    return {str(instance.get("name")): {"preset": str(instance.get("preset") or ""),
                                        "version": preset_layers.preset_version(preset)}
            for instance, preset, _key in role_vars.present_instances(variables)}


def fleet_hosts(hostvars, hosts) -> list[dict]:
    found = []
    for name in hosts:
        variables = hostvars[name]
        found.append({**role_vars.fleet_host(hostvars, name, variables), "presets": instance_presets(variables),
                      "removing": list(variables.get(fleet_run.REMOVALS) or [])})
    return found


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        result: dict = {}
        path = args["path"]
        try:
            before, previous = read_targets(path)
        except TargetsFileError as err:
            return {**result, "failed": True, "msg": str(err)}
        if args["validate_only"]:
            return {**result, "changed": False, "path": path}

        hostvars = read_once(task_vars.get("hostvars") or {})
        gateways = [{"name": name, "metrics_url": hostvars[name].get("llama_gateway_metrics_url")}
                    for name in args["gateways"]]
        inventory = [*(args["inventory_hosts"] if args["inventory_hosts"] is not None else args["hosts"]),
                     *args["gateways"]]
        found = scrape_targets.scrape_targets(fleet_hosts(hostvars, args["hosts"]), gateways, previous, inventory)
        data = scrape_targets.targets_text(found["groups"]).encode()
        changed = data != before
        if changed and not self._task.check_mode:
            try:
                write_atomically(path, data, 0o644, make_dirs=False)
            except OSError as err:
                return {**result, "failed": True, "msg": f"cannot write the scrape targets to {path}: {err}"}
        result.update(changed=changed, path=path, targets=found["groups"], notes=found["notes"], kept=found["kept"])
        if self._task.diff and changed:
            result["diff"] = {"before": (before or b"").decode("utf-8", "replace"), "after": data.decode(),
                              "before_header": path, "after_header": path}
        return result
