#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_gateway_backend
short_description: Drain fleet instances on a gateway before their restart, and put them back after
version_added: "0.3.0"
description:
  - Runs on a gateway host and talks to its HAProxy through the runtime API (a root-only UNIX socket).
  - V(drained) takes each instance out of rotation (HAProxy's C(drain) state) and waits until it holds no request,
    or until O(timeout_s) has passed, and says which. The requests counted include those of the HAProxy processes a
    reload left finishing their work, read through O(master_socket), since a stream that began before a reload is
    held there only. New requests go to the other replicas of its model meanwhile;
    a model's only replica keeps its new requests waiting in the gateway's queue until it is back.
  - A model with two or more replicas keeps one in rotation. While every other replica is out of rotation on purpose
    (another rollout drained it), the drain waits for one to come back, up to O(timeout_s). Replicas down by their
    health checks do not count, as they could not serve anyway.
  - V(ready) puts each instance back in rotation, its health up at once (the rollout has just verified it), and
    says how long it was out of rotation (the drain records when, on the gateway host).
  - An instance the gateway does not route (new, or never served) is left alone and said so.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
options:
  instances:
    description: The instances, each as C(host) (its inventory host) and C(instance) (its name).
    type: list
    elements: dict
    required: true
  state:
    description: V(drained) takes them out of rotation and waits for their requests; V(ready) puts them back.
    type: str
    choices: [drained, ready]
    required: true
  timeout_s:
    description: How long a drain waits for requests in flight (and for another replica to be back). From 0 to 86400.
    type: int
    default: 300
  admin_socket:
    description: HAProxy's runtime API socket (the gateway's C(admin_socket) setting).
    type: path
    default: /run/haproxy/admin.sock
  master_socket:
    description:
      - HAProxy's master CLI socket (the gateway's C(master_socket) setting; Debian's unit starts HAProxy with
        C(-S /run/haproxy-master.sock)).
      - Without it, a drain counts only the current process's requests, and says so.
    type: path
    default: /run/haproxy-master.sock
notes:
  - Only the Python standard library is used on the target.
attributes:
  check_mode:
    details: Says which instances the gateway routes and would be drained or put back; changes nothing.
"""

EXAMPLES = r"""
- name: Drain this host's instances on every gateway before their restart
  llamafleet.llamacpp.llama_gateway_backend:
    instances: [{host: "{{ inventory_hostname }}", instance: main}]
    state: drained
  delegate_to: "{{ item }}"
  loop: "{{ groups['llama_fleet_gateway'] }}"
"""

RETURN = r"""
servers:
  description: What happened to each instance on this gateway (C(server), C(words), and C(drained) or C(ready)); an
    instance put back in rotation that this module drained says how long it was out of it (C(out_s), seconds, by
    the gateway host's clock).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.gateway import (  # noqa: E402
    RuntimeSocket,
    master_socket,
    rotate_all,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.runtime_api import (  # noqa: E402
    DRAIN_TIMEOUT,
    server_names,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import (  # noqa: E402
    BY_NAME as GATEWAY_SETTING,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "instances": {"type": "list", "elements": "dict", "required": True},
            "state": {"type": "str", "choices": ["drained", "ready"], "required": True},
            "timeout_s": {"type": "int", "default": DRAIN_TIMEOUT.default},
            # The sockets' defaults are the gateway settings' (the role passes its own values).
            "admin_socket": {"type": "path", "default": GATEWAY_SETTING["admin_socket"].default},
            "master_socket": {"type": "path", "default": GATEWAY_SETTING["master_socket"].default},
        },
        supports_check_mode=True,
    )
    params = module.params
    names, refused = server_names(params["instances"], params["timeout_s"])
    if refused:
        module.fail_json(msg=refused)
    result, failure = rotate_all(RuntimeSocket(params["admin_socket"]), names, params["state"], params["timeout_s"],
                                 module.check_mode, master=master_socket(params["master_socket"]))
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
