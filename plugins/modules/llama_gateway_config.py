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
  keep_hosts:
    description:
      - Hosts whose servers stay as the configuration written last has them (read from its routes file,
        C(<config_path>.routes.json), root-only); the O(servers) given for them are not used. The deploy
        playbook keeps the hosts its judge found work on, before their rollout (what runs there is known once their
        instance step ran), and the hosts its rollout did not reach.
    type: list
    elements: str
    default: []
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
reload:
  description: Whether HAProxy must load a new configuration (false when only the routes file changed).
  returned: always
  type: bool
kept:
  description: Where the configuration that was there before, not written by this module, was kept.
  returned: when a foreign configuration was replaced
  type: str
"""

import json  # noqa: E402
import os  # noqa: E402

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
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import (  # noqa: E402
    read_bytes,
    write_atomically,
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


def _kept(routes_before: str, params) -> tuple[list, dict]:
    """The servers and keys to write: the given ones, but for the hosts in keep_hosts, which keep the servers of the
    routes file written with the last configuration (its text, "" when there is none)."""
    keep = set(params["keep_hosts"])
    servers = [entry for entry in params["servers"] if entry.get("host") not in keep]
    keys = {name: key for name, key in params["server_keys"].items() if name.split(":", 1)[0] not in keep}
    if keep:
        try:
            before = json.loads(routes_before or "{}")
        except ValueError:
            before = {}
        servers += [entry for entry in before.get("servers") or [] if entry.get("host") in keep]
        keys.update({name: key for name, key in (before.get("server_keys") or {}).items()
                     if name.split(":", 1)[0] in keep})
    return servers, keys


def _write_private(path: str, text: str) -> None:
    """Root-only: the configuration and the routes file hold the engines' key."""
    write_atomically(path, text.encode("utf-8"), 0o600, make_dirs=False)


def _masked(text: str, keys) -> str:
    for key in keys:
        if key:
            text = text.replace(key, "********")
    return text


def _read(path: str) -> str:
    return (read_bytes(path) or b"").decode("utf-8")


def _routes_text(servers) -> str:
    """The routes file: what was routed, with the engines' keys (root-only, like the configuration)."""
    return json.dumps({"servers": [{name: getattr(server, name) for name in SERVER_FIELDS} for server in servers],
                       "server_keys": {f"{server.host}:{server.instance}": server.key for server in servers
                                       if server.key}}, sort_keys=True, indent=1)


def _replace(module, settings, text: str, before: str, result: dict) -> None:
    """Check the new file with HAProxy's parser, save the servers' states, keep a foreign file, write."""
    path = settings.config_path
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        module.fail_json(msg=f"{directory} does not exist: is HAProxy installed?", **result)
    complaint = check_config(module.run_command, module.params["haproxy"], text, directory)
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
        _write_private(kept, before)  # the file we replace was not ours: keep it, once
        result["kept"] = kept


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "settings": module_settings_spec(),
            "api_keys": {"type": "list", "elements": "str", "default": [], "no_log": True},
            "servers": {"type": "list", "elements": "dict", "default": []},
            "server_keys": {"type": "dict", "default": {}, "no_log": True},
            "keep_hosts": {"type": "list", "elements": "str", "default": []},
            "notes": {"type": "list", "elements": "str", "default": []},
            "haproxy": {"type": "path", "default": "/usr/sbin/haproxy"},
        },
        supports_check_mode=True,
    )
    params = module.params
    settings, errors = gateway_settings({**params["settings"], "api_keys": params["api_keys"]})
    routes_path = f"{settings.config_path}.routes.json"
    try:
        routes_before = _read(routes_path)
    except OSError:
        routes_before = ""  # unreadable: nothing is kept, and it is written anew
    servers, server_errors = _servers(*_kept(routes_before, params))
    routes = fleet_routes.routes(servers, params["notes"])
    errors += server_errors + routes.errors
    if errors:
        module.fail_json(msg="the gateway cannot be configured: " + "; ".join(errors), errors=errors)
    text = haproxy_config.render(settings, routes, [HEADER, *(note.replace("\n", " ") for note in routes.notes)])
    path = settings.config_path
    before, routes_text = _read(path), _routes_text(servers)
    changed = text != before or routes_text != routes_before
    result = {"changed": changed, "path": path, "notes": routes.notes, "reload": changed and text != before,
              "default_model": haproxy_config.default_model(settings, routes),
              "models": [{"name": model.name, "backend": model.backend,
                          "replicas": [f"{server.host}/{server.instance}" for server in model.servers]}
                         for model in routes.models]}
    if module._diff:
        keys = list(params["server_keys"].values())
        result["diff"] = {"before": _masked(before, keys), "after": _masked(text, keys),
                          "before_header": path, "after_header": path}
    if result["reload"]:
        _replace(module, settings, text, before, result)
    if changed and not module.check_mode:
        _write_private(routes_path, routes_text)
        if result["reload"]:
            _write_private(path, text)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
