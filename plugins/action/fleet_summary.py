# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet summary on the controller: one table from the hosts' variables, printed and written locally.

A copy task delegated to localhost would start a local connection and two modules for a file the controller
can write itself; this writes it atomically, only when its content differs, and reports no change (a report,
not managed state).
"""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_bytes, write_atomically
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_summary import fleet_summary_markdown
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once

GATEWAY_URL = "llama_gateway_url"  # set by the llama_gateway role

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "path": {"type": "str", "default": "./fleet-summary.md"},
    "title": {"type": "str", "default": "llama-server fleet"},
    "gateways": {"type": "list", "elements": "str", "default": []},
    "gateway_hosts": {"type": "list", "elements": "str", "default": []},
    "deployments": {"type": "list", "elements": "dict", "default": []},
    "inventory_hosts": {"type": "list", "elements": "str", "default": []},
    "scope": {"type": "dict", "default": None},
}


def write_if_different(path: str, text: str) -> None:
    """Write the summary when its content differs; a missing directory is an error (a wrong path), not made."""
    data = text.encode()
    if read_bytes(path) != data:
        write_atomically(path, data, 0o644, make_dirs=False)


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        # The rows and the deployments' lines read each host: its variables gathered once.
        hostvars = read_once(task_vars.get("hostvars") or {})
        # A gateway host's URL is known once its role ran (llama_gateway_url); one that never got there has none.
        urls = [*args["gateways"],
                *(url for name in args["gateway_hosts"] if (url := (hostvars.get(name) or {}).get(GATEWAY_URL)))]
        text = fleet_summary_markdown(args["hosts"], hostvars, args["title"], urls, args["deployments"],
                                      inventory_hosts=args["inventory_hosts"], scope=args["scope"])
        if args["path"]:
            try:
                write_if_different(args["path"], text)
            except OSError as err:
                return {"failed": True, "msg": f"cannot write the fleet summary to {args['path']}: {err}"}
        # Shown like a debug message by the stdout callbacks, without -v: the summary is what the run is for.
        return {"changed": False, "msg": text.splitlines(), "path": args["path"], "_ansible_verbose_always": True}
