#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/fleet_deployments.py; it runs on the controller only.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_deployments
short_description: Place the fleet's deployments by memory, on the controller
version_added: "0.3.0"
description:
  - The deploy playbook's placement (docs/placement.md). Each host's judge (C(llamafleet.llamacpp.llama_server_host)
    with O(llamafleet.llamacpp.llama_server_host#module:deployments)) has read the host's capacity, the replicas
    placed there before and each deployment's memory need as planned there; this places every replica with
    C(fleet_placement.place) and returns each host's share.
  - A deployment's need is its C(memory_mib) when given, else the largest estimate of the hosts that could plan it.
    The host labels come from C(llama_fleet_labels), the margins from C(llama_fleet_ram_margin_mib) and
    C(llama_fleet_gpu_margin_mib), the port range from C(llama_fleet_port_range); each deployment's version (a
    digest of its layered preset) from the first read host's C(llama_server_presets).
  - A replica with no room fails the task, naming its need and the best candidate's free memory; so does a
    deployment whose need is unknown, and O(hosts) that leave out some of O(fleet) (C(--limit)). Nothing runs on a
    host.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
options:
  deployments:
    description: The fleet's deployments (C(llama_fleet_deployments)), as the judge checked them.
    type: list
    elements: raw
    required: true
  hosts:
    description: The hosts whose judge read them (their C(_llama_server_judgement.placement)).
    type: list
    elements: str
    required: true
  fleet:
    description: Every host of the fleet; placing over fewer of them is refused.
    type: list
    elements: str
seealso:
  - module: llamafleet.llamacpp.llama_server_host
attributes:
  check_mode:
    details: Places in check mode too (nothing changes either way).
"""

EXAMPLES = r"""
- name: Place the fleet's deployments
  llamafleet.llamacpp.fleet_deployments:
    deployments: "{{ llama_fleet_deployments }}"
    hosts: "{{ ansible_play_hosts }}"
  run_once: true
  register: placed
"""

RETURN = r"""
placement:
  description: The result of C(fleet_placement.place) (C(placements), C(unplaced), C(notes)).
  returned: always
  type: dict
table:
  description: The placement as lines, one per replica, then the notes.
  returned: always
  type: list
  elements: str
deployments:
  description: One row per deployment - its replicas (host, cards, port, need) and those left out.
  returned: always
  type: list
  elements: dict
refused:
  description: Whether the placement was refused (the result's C(msg) says why); the deploy playbook then fails
    every host.
  returned: always
  type: bool
hosts:
  description:
    - Each host's share - C(instances) (the replicas it runs after the rollout - name, deployment, replica, port,
      cuda_visible_devices), C(remove) (the placed replicas it runs now and no longer keeps) and C(changed).
  returned: always
  type: dict
"""
