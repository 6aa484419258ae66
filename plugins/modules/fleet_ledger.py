#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/fleet_ledger.py; it runs on the controller only.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_ledger
short_description: Record the fleet's placed replicas and cordons in the placement ledger, on the controller
version_added: "0.3.0"
description:
  - The placement ledger is a JSON file on the controller that says, for each host of the fleet, which placed
    replicas it runs and whether a maintenance run cordoned it. The deploy playbook reads it to count the hosts a run
    does not reach (outside C(--limit), another slice of a job, unreachable), and writes it at the end of every run
    that places C(llama_fleet_deployments).
  - The hosts that this run read get what they run now. A host whose rollout finished gets its share of the
    placement (O(placed)); one whose rollout did not run or did not finish gets what its judge found there. Every
    other host keeps its entry, so runs over disjoint parts of the fleet merge by host. A host that left
    O(inventory_hosts) leaves the ledger.
  - O(cordon) and O(uncordon) record a host's maintenance state; the host variable C(llama_fleet_cordoned), when set,
    wins over the record.
  - A file at O(path) that is damaged, not a ledger, or another fleet's (another O(fleet_name), or none of its hosts
    in O(inventory_hosts)) is never overwritten; the task fails naming it. The text is stable (sorted, no
    timestamps), so an unchanged fleet writes nothing. The read, merge and write hold a lock file beside it
    (O(path) with C(.lock) added), so runs that end at the same time (the slices of a job) merge one after the
    other.
  - Nothing runs on a host.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
options:
  path:
    description: The ledger on the controller (its directory must exist). A relative path is relative to the
      directory the playbook is run from. Jobs that run as several slices need it on storage that every slice reads.
    type: str
    default: ./fleet-ledger.json
  fleet_name:
    description: The fleet's name, which the ledger carries (the deploy playbook gives C(llama_fleet_name), by default
      its host pattern C(llama_fleet_hosts)).
    type: str
    default: llama_fleet
  inventory_hosts:
    description: Every host of the fleet, within a C(--limit) or not.
    type: list
    elements: str
    required: true
  placed:
    description: The replicas each host this run read runs once its rollout is done, by host (the C(ledger) that
      M(llamafleet.llamacpp.fleet_deployments) returns). A host's C(llama_fleet_status) says whether that rollout
      finished.
    type: dict
  cordon:
    description: Hosts to record as cordoned (no new replica; their replicas move on the next deploy run).
    type: list
    elements: str
    default: []
  uncordon:
    description: Hosts to record as open again. Only replicas needed elsewhere move back to them.
    type: list
    elements: str
    default: []
  refused:
    description: Whether the run was refused before any host changed (the placement's C(refused)); then nothing is
      recorded, its cordons neither. With no O(placed), O(cordon) or O(uncordon) nothing is recorded either, and the
      file is not read.
    type: bool
    default: false
seealso:
  - module: llamafleet.llamacpp.fleet_deployments
attributes:
  check_mode:
    support: full
    details: Says whether the ledger would change, and writes nothing.
  diff_mode:
    support: full
"""

EXAMPLES = r"""
- name: Record the placement
  llamafleet.llamacpp.fleet_ledger:
    path: ./fleet-ledger.json
    fleet_name: llama_fleet
    inventory_hosts: "{{ query('ansible.builtin.inventory_hostnames', 'llama_fleet') }}"
    placed: "{{ _llama_fleet_placed.ledger }}"
  run_once: true

- name: Cordon gpu3 for a driver upgrade
  llamafleet.llamacpp.fleet_ledger:
    fleet_name: llama_fleet
    inventory_hosts: "{{ query('ansible.builtin.inventory_hostnames', 'llama_fleet') }}"
    cordon: [gpu3]
  run_once: true
"""

RETURN = r"""
path:
  description: The ledger.
  returned: success
  type: str
hosts:
  description: The hosts whose placed replicas this run recorded.
  returned: success
  type: list
  elements: str
cordoned:
  description: The hosts the ledger records as cordoned, after this task.
  returned: success
  type: list
  elements: str
"""
