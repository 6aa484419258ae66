# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A gateway judged on the controller from what its host's judge read in the same run: the files the gateway role
would write are rendered here (_gateway/config_file.py, as the role's module renders them) and compared with the
reading's digests (_gateway/gateway_judgement.py). A gateway with nothing to do records its URL, exporter and routes
as the role would, and the deploy playbook does not run the role on it: a run that changes nothing costs the gateway
no run of its own."""

from __future__ import annotations

import os

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import config_file
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.gateway_judgement import gateway_judgement
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.haproxy_config import gateway_urls
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.runtime_api import (
    DRAIN_TIMEOUT,
    server_names,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import gateway_settings
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import gateway_fleet, role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction

# The gateway role's Lua actions, as its configuration step reads them.
LUA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "roles", "llama_gateway", "files", "llamafleet.lua")

ARGUMENT_SPEC = {
    "fleet_hosts": {"type": "list", "elements": "str", "required": True},
    "keep_hosts": {"type": "list", "elements": "str", "default": []},
    "cordoned_hosts": {"type": "list", "elements": "str", "default": []},
    "reading": {"type": "dict", "default": None},
}


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict, task_vars: dict) -> dict:
        why, facts = self._judge(args, task_vars)
        return {"changed": False, "current": not why, "why": why, **({"ansible_facts": facts} if facts else {})}

    def _judge(self, args: dict, task_vars: dict) -> tuple[list[str], dict]:
        if args["reading"] is None:
            return gateway_judgement(None, config="", routes_file="", lua="", verified=()), {}
        if args["keep_hosts"]:
            return gateway_judgement(args["reading"], config="", routes_file="", lua="", verified=(),
                                     keep_hosts=args["keep_hosts"]), {}
        try:
            raw = role_vars.gateway_variables(self._templar, task_vars)
        except role_vars.RoleVariableError:
            return ["its settings cannot be read (the gateway role says why)"], {}
        settings, errors = gateway_settings(raw)
        if errors:
            return ["its settings are wrong (the gateway role says how)"], {}
        try:
            fleet = gateway_fleet.gateway_servers(task_vars.get("hostvars") or {}, args["fleet_hosts"], (),
                                                  args["cordoned_hosts"])
        except gateway_fleet.GatewayFleetError:
            return ["the fleet cannot be routed (the gateway role says why)"], {}
        files, errors = config_file.gateway_files(settings, "", servers=fleet["servers"],
                                                  server_keys=fleet["server_keys"], keep_hosts=(), notes=fleet["notes"])
        verified, refused = server_names(fleet["verified"], DRAIN_TIMEOUT.default)
        if errors or refused:
            return ["its configuration cannot be written (the gateway role says why)"], {}
        with open(LUA_PATH, encoding="utf-8") as handle:
            lua = handle.read()
        why = gateway_judgement(args["reading"], config=files.config, routes_file=files.routes_file, lua=lua,
                                verified=verified)
        if why:
            return why, {}
        address = self._templar.template(task_vars.get("ansible_host", task_vars.get("inventory_hostname")))
        urls = gateway_urls({"listen_address": settings.listen_address, "port": settings.port,
                             "metrics_port": settings.metrics_port, "tls_certificate": settings.tls_certificate},
                            str(address))
        return [], {"llama_gateway_url": urls["url"], "llama_gateway_metrics_url": urls["metrics_url"],
                    "llama_gateway_models": config_file.routed_models(files.routes)}
