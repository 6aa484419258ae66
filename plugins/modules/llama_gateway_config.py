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
    the next HAProxy process loads, so a reload keeps them (the module makes that file, empty, when it is missing).
    The reload itself is the caller's (the role reloads the C(haproxy) service, which hands its listening sockets
    over without refusing a connection).
  - It also reads what the rest of the gateway's step needs, so that a gateway that is as it should be costs this
    one module run - whether the C(haproxy) service runs and starts at boot (RV(running)), and which of the
    O(verified) instances it has out of rotation (RV(out_of_rotation)).
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
  lua:
    description:
      - The text of the gateway's Lua actions (the role's C(files/llamafleet.lua)), written to the C(lua_path) of
        O(settings) (root, mode 0644) before the configuration is checked, when it differs from what is there.
        HAProxy loads it at a start or reload only, so a new text sets RV(reload).
      - Without it, the file is left as it is.
    type: str
  verified:
    description:
      - The instances the fleet's report says run their plans and are verified, each with C(host) and
        C(instance); RV(out_of_rotation) says which of them this gateway does not send requests to now.
    type: list
    elements: dict
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
  description:
    - Whether HAProxy must load a new configuration or new Lua actions (false when only the routes file changed).
  returned: always
  type: bool
running:
  description: Whether the C(haproxy) service is active and enabled.
  returned: always
  type: bool
out_of_rotation:
  description:
    - The gateway's server names of the O(verified) instances it does not send requests to now (drained, in
      maintenance or down by its checks). All of them when HAProxy does not run or reloads (RV(reload)), or when
      its runtime API cannot be read; none that it does not route.
  returned: always
  type: list
  elements: str
kept:
  description: Where the configuration that was there before, not written by this module, was kept.
  returned: when a foreign configuration was replaced
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.gateway import (  # noqa: E402
    ConfigRefused,
    write_config,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.runtime_api import (  # noqa: E402
    DRAIN_TIMEOUT,
    server_names,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import (  # noqa: E402
    module_settings_spec,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "settings": module_settings_spec(),
            "api_keys": {"type": "list", "elements": "str", "default": [], "no_log": True},
            "servers": {"type": "list", "elements": "dict", "default": []},
            "server_keys": {"type": "dict", "default": {}, "no_log": True},
            "keep_hosts": {"type": "list", "elements": "str", "default": []},
            "notes": {"type": "list", "elements": "str", "default": []},
            "lua": {"type": "str"},
            "verified": {"type": "list", "elements": "dict", "default": []},
            "haproxy": {"type": "path", "default": "/usr/sbin/haproxy"},
        },
        supports_check_mode=True,
    )
    params = module.params
    verified, refused = server_names(params["verified"], DRAIN_TIMEOUT.default)
    if refused:
        module.fail_json(msg=f"verified: {refused}")
    try:
        result = write_config({**params["settings"], "api_keys": params["api_keys"]}, params["servers"],
                              params["server_keys"], params["keep_hosts"], params["notes"], haproxy=params["haproxy"],
                              run=module.run_command, check_mode=module.check_mode, diff=module._diff,
                              lua=params["lua"], verified=verified)
    except ConfigRefused as err:
        module.fail_json(msg=str(err), **err.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
