#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/llama_server_host.py (and, on the target, the module
# llama_server_judge); this file holds its documentation, which is also its argument spec.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_host
short_description: Judge whether a host already runs its llama-server plans, in one step that changes nothing
version_added: "0.3.0"
description:
  - The first step of the C(llamafleet.llamacpp.llama_server) role, and the first play of the deploy playbook.
    On the controller it checks the role's inputs (instance names, states, ports, keys, environments, engine and
    model sources, the runtime's settings) and fails naming each problem, before any host is read or changed.
  - It then runs the judge once on the target, which reads what the role would change (account, directories,
    planning runtime, engine or image, models, removed instances) and, when those are in place, plans and judges
    each instance against what runs with the very code of C(llamafleet.llamacpp.llama_server_apply), for either
    runtime.
  - The judge runs from a copy of the collection's module_utils that this action keeps in the planning venv
    (O(venv)), once per version of the collection, under a digest of its sources, compiled there; a version
    it finds missing is installed (outside check mode) and the others removed. A host with nothing to do then
    costs no module payload to build, send and compile. Where the copy cannot answer, the module
    C(llamafleet.llamacpp.llama_server_judge) does, with the same code.
  - A host that is RV(current) needs nothing. The role skips its steps and reports RV(report), read from the
    running engines. Any other host goes through the role's steps, which change what RV(why) names.
  - A host that another rollout holds (the lock of C(llamafleet.llamacpp.llama_server_lock)) fails here, naming
    the holder; a holder of this controller that no longer runs is not counted.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.instance_settings
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
options:
  instances:
    description: The role's C(llama_server_instances).
    type: list
    elements: dict
    default: []
  presets:
    description: The role's C(llama_server_presets).
    type: dict
    default: {}
  engine_bin:
    description: The role's C(llama_server_engine_bin).
    type: str
    default: ""
  engine_archive_url:
    description: The role's C(llama_server_engine_archive_url).
    type: str
    default: ""
  engine_archive_checksum:
    description: The role's C(llama_server_engine_archive_checksum).
    type: str
    default: ""
  engine_dir:
    description: The versioned directory an engine archive is unpacked into (its install marker is there).
    type: str
    default: ""
  models:
    description: The role's C(llama_server_models).
    type: list
    elements: dict
    default: []
  venv:
    description: The planning venv on the target; its interpreter runs the judge, and it records what it was built from.
    type: str
    default: ""
  runtime_manifest:
    description: What the planning venv must have been built from (packages, wheels, pip arguments).
    type: dict
    default: {}
  unit_dir:
    description: Where the units are.
    type: str
    default: /etc/systemd/system
  lock_path:
    description: The rollout lock file (read only here).
    type: str
    default: /run/llamafleet/rollout.lock
  lock_lease_s:
    description: Seconds after which a lock taken from another controller counts as abandoned.
    type: int
    default: 21600
  deployments:
    description:
      - The fleet's deployments (C(llama_fleet_deployments), docs/placement.md), given by the deploy playbook when it
        places them. They are checked here with this host's presets and instances (a bad field fails the task
        before the host is read); the judge then also judges the replicas placed here before, and RV(placement)
        says what the playbook's placement reads of this host. Without the planning venv the judge runs under the
        host's own interpreter, which reads the capacity (no estimate yet).
    type: list
    elements: raw
  place:
    description:
      - Without O(deployments), take them from this host's C(llama_fleet_deployments) (as the deploy playbook does),
        templated here with each distinct string of them templated once (the same value as templating the list
        whole, for a fraction of the cost on a large fleet). Nothing to place when the host has none.
    type: bool
    default: false
  read_gateway:
    description:
      - This host is also one of the fleet's gateways (the deploy playbook says so for the run's gateways) - the judge
        reads what the gateway has in the same run - RV(gateway) - from the host's C(llama_gateway_*) settings (their
        defaults where it sets none). C(llamafleet.llamacpp.llama_gateway_judge) compares it with what the gateway
        role would write, so that a run that changes nothing costs the gateway no run of its own.
    type: bool
    default: false
  role_variables:
    description:
      - Read each option the task leaves out from the C(llamafleet.llamacpp.llama_server) role's variable that gives
        it on this host, as the role's judge step does - O(presets) from C(llama_server_presets), O(settings) from
        each C(llama_server_<setting>), O(instances) from the role's present, stopped and absent instances, O(place)
        and O(read_gateway) from the deploy playbook's judge play - each distinct string of them templated once. A
        variable the host does not define leaves its option at its default, but the settings must all be defined (the
        role defines them).
      - The values are checked exactly as the same options given in the task.
      - The same values as the task's arguments templated by Ansible, without templating the role's fifty presets
        (say) through every template of a 1,000-host fleet's arguments.
    type: bool
    default: false
notes:
  - The API keys go to the target only as the judge's no_log option, to read the running engines' C(/props);
    every string of the result is scrubbed of them.
seealso:
  - module: llamafleet.llamacpp.llama_server_instance
  - module: llamafleet.llamacpp.llama_server_judge
attributes:
  check_mode:
    details: Changes nothing in any mode, so check mode gives the same answer.
"""

EXAMPLES = r"""
- name: Judge this host against its plans
  llamafleet.llamacpp.llama_server_host:
    instances: [{name: main, preset: small, api_key: "{{ vault_llama_key }}"}]
    presets: {small: {MODEL: gemma-3-270m-q4_k_m.gguf, CTX: 4096}}
    engine_bin: /usr/local/bin/llama-server
    venv: /opt/llamafleet/venv
  register: judged

- name: Converge only what needs it
  ansible.builtin.debug:
    msg: "{{ judged.why }}"
  when: not judged.current
"""

RETURN = r"""
current:
  description: Nothing would change on the host and every present instance runs its plan, healthy.
  returned: always
  type: bool
why:
  description: What the role has to do on this host, first things first (empty when RV(current)).
  returned: always
  type: list
  elements: str
report:
  description:
    - The report rows of the instances (as C(llamafleet.llamacpp.llama_server_instance) returns them), read from
      the running engines; only when RV(current).
  returned: always
  type: list
  elements: dict
kept:
  description:
    - The report rows of the instances that run their plans, whether or not the host is RV(current) (none when
      C(work.all)). The role steps only the instances of C(work.instances) after its own judge, and its report
      starts with these rows.
  returned: always
  type: list
  elements: dict
engine:
  description: The engine binary as installed (the role uses it instead of reading the install marker again).
  returned: always
  type: str
work:
  description:
    - The instances the rollout will touch (a gateway drains them first) - C(instances), by name (present ones that
      will restart or be written, absent ones still there) - or C(all) when a part they share (account, planning
      runtime, engine, model) is not in place.
  returned: always
  type: dict
placement:
  description:
    - With O(deployments) - C(capacity) (C(ram_free_mib) is the RAM free less what the running engines reserved and
      do not use yet; C(gpus) with NVML's free memory; C(ports_used)), C(placed) (the replicas placed here before -
      their deployment, replica, port, cards, need and whether they run their plan), C(estimates) (each deployment's
      need per replica as planned on this host, or why it is unknown) and C(needs_preparing) (the host lacks the
      engine, runtime or a model it needs to plan them - the deploy playbook prepares it first) - the judge's reading
      as it sent it (C(HostReading) in C(_placement/readings.py)).
  returned: when O(deployments) is given and the host could be read
  type: dict
gateway:
  description:
    - With O(read_gateway) - the SHA-256 of the gateway's C(config), C(routes) file and C(lua) actions (empty for a
      missing file), C(lua_kept) (root's, mode 0644), C(state_file) (the servers' states file exists), C(running)
      (HAProxy active and enabled), C(answered) (its runtime API answered) and C(out_of_rotation) (the servers it
      sends no request to now). Not read when the host's gateway settings are wrong.
  returned: when O(read_gateway) is true and the gateway's settings are valid
  type: dict
"""
