#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_judge
short_description: Judge one host against its llama-server plans, changing nothing (target side of llama_server_host)
version_added: "0.3.0"
description:
  - The target half of C(llamafleet.llamacpp.llama_server_host); that action builds its options from the role's
    variables. Use the action; these options are its wire format.
  - In one run on the target, under the planning venv's interpreter, it reads what the role would change in
    the parts every instance shares - the service account and directories, the planning runtime, the engine (or
    the compose runtime's image), the model markers (no model is hashed), instances in state absent, and whether
    the instances in state stopped are stopped and do not start at boot. Only when
    those are in place does it plan each present instance, render its files and judge it with the very code of
    C(llamafleet.llamacpp.llama_server_apply) (files, the running engine's command line and environment, the
    unit's or container's state), then read C(/health) and C(/props) of its engine; it stops at the first
    instance with work.
  - The host is RV(current) when none of it would change and every engine runs its plan healthy; the report
    rows then describe what runs. Otherwise RV(why) says what the role has to do.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.instance_settings
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
options:
  instances:
    description:
      - The present instances, their presets layered and without any key (C(name), C(preset),
        C(environment)).
    type: list
    elements: dict
    default: []
  keys:
    description: The API key of each instance that has one, by instance name.
    type: dict
    default: {}
  absent:
    description: Names of the instances in state absent.
    type: list
    elements: str
    default: []
  stopped:
    description: Names of the instances in state stopped (current when their service is stopped and does not start
      at boot).
    type: list
    elements: str
    default: []
  account:
    description: The service account as the role creates it (C(user), C(group), C(home), C(shell), C(comment)).
    type: dict
    required: true
  directories:
    description: The role's directories (C(path), C(owner), C(group), C(mode)).
    type: list
    elements: dict
    default: []
  planning_venv:
    description: The planning venv's marker file (C(marker)) and the manifest it must hold (C(manifest)).
    type: dict
    required: true
  engine:
    description:
      - C(bin), an installed engine; or C(marker) and C(checksum) of an engine installed from an archive. Not read
        with the compose runtime, whose engine is in the image.
    type: dict
    default: {}
  models:
    description: The model files (C(path), C(checksum)).
    type: list
    elements: dict
    default: []
  unit_dir:
    description: Where the units are.
    type: str
    default: /etc/systemd/system
  lock_path:
    description: The rollout lock file, read only.
    type: str
    default: /run/llamafleet/rollout.lock
  placement:
    description:
      - The deploy playbook's placement (C(llama_fleet_deployments)) - C(deployments), each with its C(name),
        layered C(preset) (no key - the keys are in O(keys) as C(deployment <name>)), C(environment), C(gpus) and
        C(version). The replicas placed here before (found by their state files) are then judged with their
        deployment's preset, and RV(placement) says what the placement reads of this host.
    type: dict
  gateway:
    description:
      - This host is also one of the fleet's gateways - its C(config_path), C(lua_path), C(state_file) and
        C(admin_socket) (the gateway's settings of those names). RV(gateway) then says what the gateway has, so that
        the controller can tell whether its configuration would change without a run of its own.
    type: dict
seealso:
  - module: llamafleet.llamacpp.llama_server_host
  - module: llamafleet.llamacpp.llama_server_apply
attributes:
  check_mode:
    details: Changes nothing in any mode.
"""

EXAMPLES = r"""
# Called by the llamafleet.llamacpp.llama_server_host action; see that one.
- name: Judge this host
  llamafleet.llamacpp.llama_server_host:
    instances: "{{ llama_server_instances }}"
    presets: "{{ llama_server_presets }}"
    engine_bin: /usr/local/bin/llama-server
"""

RETURN = r"""
current:
  description: Nothing would change and every present instance runs its plan, healthy.
  returned: always
  type: bool
why:
  description: What the role would do, first things first (empty when RV(current)).
  returned: always
  type: list
  elements: str
report:
  description: The instances' report rows, from what runs (only when RV(current)).
  returned: always
  type: list
  elements: dict
engine:
  description: The engine binary as installed (its path inside the image with the compose runtime); empty when the
    engine step has work.
  returned: always
  type: str
work:
  description:
    - The instances the rollout will touch - C(instances), by name - or C(all) when a part they share is not in
      place.
  returned: always
  type: dict
lock_holder:
  description: Who holds the rollout lock (empty when it is free).
  returned: always
  type: dict
placement:
  description:
    - C(capacity) (C(ram_total_mib), C(ram_free_mib) less what the running engines reserved and do not use yet,
      C(reserved_mib), C(gpus) with NVML's free memory, C(ports_used)), C(placed) (the replicas found here - their
      record, plan's need and whether they run their plan), C(estimates) (each deployment's need per replica,
      planned here, or why it is unknown) and C(needs_preparing) (the host lacks the engine, runtime or a model it
      needs to plan them).
  returned: when O(placement) is given
  type: dict
gateway:
  description:
    - The SHA-256 of the gateway's C(config), C(routes) file and C(lua) actions (empty for a missing file),
      C(lua_kept) (root's, mode 0644), C(state_file) (the servers' states file exists), C(running) (HAProxy is
      active and enabled), C(answered) (its runtime API answered) and C(out_of_rotation) (the servers it sends no
      request to now).
  returned: when O(gateway) is given
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import host_judge  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.compose import (  # noqa: E402
    docker_environment,
)

ARGUMENT_SPEC = host_judge.argument_spec()


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.no_log_values.update(str(key) for key in module.params["keys"].values() if key)
    docker_env = docker_environment(module.params["settings"])
    result = host_judge.judge_or_why(module.params, lambda argv: module.run_command(list(argv)),
                                     lambda argv: module.run_command(list(argv), environ_update=docker_env))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
