#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/fleet_rollout.py; it runs on the controller only.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_rollout
short_description: Order the deploy playbook's rollout in batches, on the controller
version_added: "0.3.0"
description:
  - Sets the fact C(llama_fleet_rollout) - its C(order), the hosts of O(hosts) whose judge found work
    (C(llama_fleet_status) C(judged)) in inventory order, the first being the canary, and its C(serial), the batch
    sizes for the rollout play's C(serial). Delegate its facts to C(localhost) so that the rollout play can read them.
  - The batches follow O(serial) and, with gateways, never take more of a model's replicas out of their rotation
    than O(max_unavailable) lets - each host restarts its instances one at a time, so a batch holds at most that
    many hosts restarting a replica of the model (the routes are the first gateway's C(llama_gateway_models), what
    each host restarts is its judge's work). A batch only gets smaller or later hosts move up. The fact also holds
    C(allowed), each routed model's bound in replicas, and C(refusal), which names the models that would restart
    while their bound is 0 - the task then fails with it (run once, it fails every host of the play before the
    rollout).
  - Nothing runs on a host.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.fleet_variables
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
  - llamafleet.llamacpp.rollout_bounds
options:
  hosts:
    description: The run's hosts, in inventory order (C(llama_fleet_run.hosts)).
    type: list
    elements: str
    required: true
  gateways:
    description: The fleet's gateways (C(llama_fleet_run.gateways)), configured from what runs before the rollout.
    type: list
    elements: str
    default: []
  serial:
    description: The operator's batches (C(llama_fleet_serial)) - a number, a percentage such as C(25%), or a list
      of them, as a play's C(serial); the last one repeats.
    type: raw
    default: [1, "100%"]
seealso:
  - module: llamafleet.llamacpp.fleet_run
attributes:
  check_mode:
    details: Sets its fact in check mode too (nothing changes either way).
"""

EXAMPLES = r"""
- name: Order the rollout's hosts in batches
  llamafleet.llamacpp.fleet_rollout:
    hosts: "{{ llama_fleet_run.hosts }}"
    gateways: "{{ llama_fleet_run.gateways }}"
    serial: [1, "25%"]
  delegate_to: localhost
  delegate_facts: true
  run_once: true
"""

RETURN = r"""
ansible_facts:
  description: The rollout, as C(llama_fleet_rollout).
  returned: always
  type: dict
  contains:
    llama_fleet_rollout:
      description: C(order) (the hosts with work, in rollout order), C(serial) (the batch sizes), C(allowed) (each
        routed model's replicas that may be out of rotation at once) and C(refusal) (empty, or why no rollout may
        start).
      returned: always
      type: dict
"""
