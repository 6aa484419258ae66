# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's Prometheus ``file_sd`` targets written on the controller from the hosts' reports of this run, for the
actions fleet_metrics_targets and fleet_report.

What goes in is decided in _gateway/scrape_targets.py; this reads the hosts' variables, keeps the file's groups of
the hosts this run did not reach, and writes atomically, only when the content differs (not in check mode: the
file is what a Prometheus reads).
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import scrape_targets
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import preset_layers
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import write_atomically
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_run, role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.targets_file import TargetsFileError, read_targets

# The targets' options (the action fleet_metrics_targets's, and fleet_report's targets part).
TARGETS_SPEC = {
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


def targets_result(args: Mapping, hostvars: Mapping, *, check_mode: bool = False, diff: bool = False) -> dict:
    """The scrape targets of ``args`` (TARGETS_SPEC's options, checked) from the hosts' variables (each read once),
    written to ``path`` when they differ, as an action's result. A file there that is not this collection's is
    refused, left as it is."""
    path = args["path"]
    try:
        before, previous = read_targets(path)
    except TargetsFileError as err:
        return {"failed": True, "msg": str(err)}
    if args["validate_only"]:
        return {"changed": False, "path": path}
    gateways = [{"name": name, "metrics_url": hostvars[name].get("llama_gateway_metrics_url")}
                for name in args["gateways"]]
    inventory = [*(args["inventory_hosts"] if args["inventory_hosts"] is not None else args["hosts"]),
                 *args["gateways"]]
    found = scrape_targets.scrape_targets(fleet_hosts(hostvars, args["hosts"]), gateways, previous, inventory)
    data = scrape_targets.targets_text(found["groups"]).encode()
    changed = data != before
    if changed and not check_mode:
        try:
            write_atomically(path, data, 0o644, make_dirs=False)
        except OSError as err:
            return {"failed": True, "msg": f"cannot write the scrape targets to {path}: {err}"}
    result = {"changed": changed, "path": path, "targets": found["groups"], "notes": found["notes"],
              "kept": found["kept"]}
    if diff and changed:
        result["diff"] = {"before": (before or b"").decode("utf-8", "replace"), "after": data.decode(),
                          "before_header": path, "after_header": path}
    return result
