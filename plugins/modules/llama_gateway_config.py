#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_gateway_config
short_description: Write the fleet gateway's HAProxy configuration from the fleet's running instances
version_added: "0.3.0"
description:
  - Renders the gateway's HAProxy configuration from its O(settings) and the fleet's O(servers) (the instances
    that run and answered, from the fleet's report), checks it with HAProxy's own parser (C(haproxy -c)), and
    writes it (mode 0600, root) only when its text changed and the parser accepted it.
  - Requests are routed by the C(model) of their JSON body to the replicas that serve it; each replica takes at
    most its slot count of requests at once, and the others wait in the gateway's queue. Clients' keys are kept
    as their SHA-256 only; the engines' key of each model is set by the gateway on the requests it forwards.
  - Before a changed file is written, the servers' states (a drained one stays drained) are saved to the file
    the next HAProxy process loads, so a reload keeps them. The reload itself is the caller's (the role reloads
    the C(haproxy) service, which hands its listening sockets over without refusing a connection).
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.gateway_settings
options:
  api_keys:
    description:
      - The clients' API keys (sent as C(Bearer KEY) in C(Authorization)); the file keeps their SHA-256 only.
        Not logged.
    type: list
    elements: str
    default: []
  servers:
    description:
      - The instances to route to, each with C(host) (the inventory host), C(instance), C(address) (where the
        gateway connects), C(port), C(slots) (requests it takes at once) and C(model) (the name its engine lists
        in C(/v1/models)).
    type: list
    elements: dict
    default: []
  server_keys:
    description: The API key of each server, by C(host:instance). Not logged.
    type: dict
    default: {}
  notes:
    description: Lines to keep as comments at the top of the file (why instances were left out).
    type: list
    elements: str
    default: []
  haproxy:
    description: The HAProxy binary that checks the file.
    type: path
    default: /usr/sbin/haproxy
notes:
  - Needs HAProxy 2.6 or later with Lua, and the Lua module C(cjson) (Debian's C(haproxy) and C(lua-cjson)).
attributes:
  check_mode:
    details: Renders and checks the file, and says whether it would change; writes nothing.
  diff_mode:
    support: full
    details: The configuration's text before and after, with the engines' keys masked.
"""

EXAMPLES = r"""
- name: Route the fleet's models through this gateway
  llamafleet.llamacpp.llama_gateway_config:
    settings:
      api_keys: ["{{ vault_gateway_key }}"]
      port: 8000
    servers:
      - {host: gpu1, instance: main, address: 10.0.0.11, port: 8080, slots: 4, model: gemma-3-27b}
      - {host: gpu2, instance: main, address: 10.0.0.12, port: 8080, slots: 4, model: gemma-3-27b}
    server_keys:
      "gpu1:main": "{{ vault_engine_key }}"
      "gpu2:main": "{{ vault_engine_key }}"
"""

RETURN = r"""
path:
  description: The configuration file.
  returned: always
  type: str
models:
  description: The models the gateway routes, each with its C(name), C(backend) and C(replicas) (host/instance).
  returned: always
  type: list
  elements: dict
default_model:
  description: The model of a request that names none ("" when the fleet serves none).
  returned: always
  type: str
notes:
  description: Instances left out, and why.
  returned: always
  type: list
  elements: str
kept:
  description: Where the configuration that was there before, not written by this module, was kept.
  returned: when a foreign configuration was replaced
  type: str
"""

import os  # noqa: E402
import tempfile  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.gateway import (  # noqa: E402
    GatewayError,
    RuntimeSocket,
    check_config,
    save_server_state,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import (  # noqa: E402
    fleet_routes,
    haproxy_config,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import (  # noqa: E402
    gateway_settings,
    module_settings_spec,
)

SERVER_FIELDS = ("host", "instance", "address", "port", "slots", "model")
HEADER = "Written by llamafleet.llamacpp (llama_gateway) from the fleet's running instances; edits are replaced."


def _servers(entries, keys) -> tuple[list[fleet_routes.Server], list[str]]:
    servers, errors = [], []
    for index, entry in enumerate(entries):
        missing = [name for name in SERVER_FIELDS if entry.get(name) in (None, "")]
        if missing:
            errors.append(f"servers[{index}]: {', '.join(missing)} missing")
            continue
        row = {"instance": entry["instance"], "state": "deployed", "host": entry["address"], "port": entry["port"],
               "slots": entry["slots"], "model_name": entry["model"]}
        key = str(keys.get(f"{entry['host']}:{entry['instance']}") or "")
        server, why = fleet_routes.server_from_row(str(entry["host"]), str(entry["address"]), row, key)
        if server is None:
            errors.append(why.removeprefix("error: ") or f"servers[{index}]: {entry['host']}/{entry['instance']}")
        else:
            servers.append(server)
    return servers, errors


def _masked(text: str, keys) -> str:
    for key in keys:
        if key:
            text = text.replace(key, "********")
    return text


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "settings": module_settings_spec(),
            "api_keys": {"type": "list", "elements": "str", "default": [], "no_log": True},
            "servers": {"type": "list", "elements": "dict", "default": []},
            "server_keys": {"type": "dict", "default": {}, "no_log": True},
            "notes": {"type": "list", "elements": "str", "default": []},
            "haproxy": {"type": "path", "default": "/usr/sbin/haproxy"},
        },
        supports_check_mode=True,
    )
    params = module.params
    settings, errors = gateway_settings({**params["settings"], "api_keys": params["api_keys"]})
    servers, server_errors = _servers(params["servers"], params["server_keys"])
    routes = fleet_routes.routes(servers, params["notes"])
    errors += server_errors + routes.errors
    if errors:
        module.fail_json(msg="the gateway cannot be configured: " + "; ".join(errors), errors=errors)
    header = [HEADER, *(note.replace("\n", " ") for note in routes.notes)]
    text = haproxy_config.render(settings, routes, header)
    path = settings.config_path
    try:
        with open(path, encoding="utf-8") as handle:
            before = handle.read()
    except FileNotFoundError:
        before = ""
    changed = text != before
    result = {"changed": changed, "path": path, "notes": routes.notes, "default_model":
              haproxy_config.default_model(settings, routes),
              "models": [{"name": model.name, "backend": model.backend,
                          "replicas": [f"{server.host}/{server.instance}" for server in model.servers]}
                         for model in routes.models]}
    if module._diff:
        keys = list(params["server_keys"].values())
        result["diff"] = {"before": _masked(before, keys), "after": _masked(text, keys),
                          "before_header": path, "after_header": path}
    if not changed:
        module.exit_json(**result)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        module.fail_json(msg=f"{directory} does not exist: is HAProxy installed?", **result)
    complaint = check_config(params["haproxy"], text, directory)
    if complaint:
        module.fail_json(msg=f"HAProxy's parser refused the new configuration (nothing was written): {complaint}",
                         **result)
    if module.check_mode:
        module.exit_json(**result)
    if os.path.exists(settings.admin_socket):
        try:  # a running gateway: keep its drained servers drained across the reload
            save_server_state(RuntimeSocket(settings.admin_socket), settings.state_file)
        except (GatewayError, OSError) as err:
            result.setdefault("warnings", []).append(f"the servers' states were not saved before the reload: {err}")
    kept = f"{path}.before-llamafleet"
    if before and not before.startswith(f"# {HEADER}") and not os.path.exists(kept):
        with open(kept, "w", encoding="utf-8") as handle:  # the file we replace was not ours: keep it, once
            handle.write(before)
        result["kept"] = kept
    descriptor, temporary = tempfile.mkstemp(prefix=".llamafleet-", dir=directory)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
