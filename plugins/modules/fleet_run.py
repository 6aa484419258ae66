#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/fleet_run.py; it runs on the controller only.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_run
short_description: Say which hosts a run of the deploy playbook holds, on the controller
version_added: "0.3.0"
description:
  - The deploy playbook's first step. Sets the fact C(llama_fleet_run) - its C(hosts) (O(hosts), the fleet's hosts
    within C(--limit)), its C(inventory_hosts) (O(inventory_hosts), the fleet's hosts whatever the limit) and its
    C(gateways) (the hosts of the inventory group O(gateway_group), none without it) - which the playbook's plays
    read by name. Delegate its facts to C(localhost) so that every play of the run can read them.
  - It also checks the fleet's settings before any host changes, and says what is wrong in the fact's C(refusal)
    (empty when nothing is) - O(unreachable), the placement ledger at O(ledger_path) (absent, or this fleet's),
    O(cordon) and O(uncordon) (hosts of the fleet, not both, not against the inventory), and every fleet host's
    C(llama_fleet_cordoned) (a boolean, or not set) and C(llama_fleet_cordoned_instances) (C(keep) or C(stop), or
    not set), O(serial) - and the scrape targets file at O(metrics_targets_path) (absent, or this collection's). The
    task then fails with it (run once, it fails every host of the play, before any of them changes).
  - "The fact's C(cordoned) lists the fleet hosts cordoned in this run: a host's C(llama_fleet_cordoned) when set
    (it wins), else the request (O(cordon), O(uncordon)), else the ledger's record."
  - Nothing runs on a host.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.fleet_variables
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
  - llamafleet.llamacpp.fleet_ledger
  - llamafleet.llamacpp.rollout_bounds
options:
  hosts:
    description: The run's hosts, in inventory order (the judge play's C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  inventory_hosts:
    description: Every host of the fleet's pattern (C(llama_fleet_hosts)), whatever C(--limit) leaves out.
    type: list
    elements: str
    required: true
  gateway_group:
    description: The inventory group of the fleet's gateways (C(llama_fleet_gateway_group)).
    type: str
    required: true
  cordon:
    description: The maintenance playbook's hosts to cordon in this run (C(llama_fleet_cordon)); recorded in the
      ledger at the end of a run that was not refused.
    type: list
    elements: str
    default: []
  uncordon:
    description: The maintenance playbook's hosts to open again (C(llama_fleet_uncordon)).
    type: list
    elements: str
    default: []
  maintenance:
    description: Whether this is a maintenance run (C(llama_fleet_maintenance), set by C(playbooks/maintenance.yml));
      one without O(cordon) or O(uncordon) is refused.
    type: bool
    default: false
  metrics_targets_path:
    description: The fleet's Prometheus scrape targets file (C(llama_fleet_metrics_targets_path)), written at the end
      of the run by M(llamafleet.llamacpp.fleet_metrics_targets); a file there that is not this collection's is
      refused here, before any host changes. None to write none.
    type: str
  serial:
    description: The rollout's batch sizes (C(llama_fleet_serial)), checked here as
      M(llamafleet.llamacpp.fleet_rollout) reads them - a number, a percentage (C("25%")) or a list of them - so that
      a wrong one is refused even by a run in which no host has work.
    type: raw
    default: [1, "100%"]
seealso:
  - module: llamafleet.llamacpp.fleet_rollout
attributes:
  check_mode:
    details: Sets its fact in check mode too (nothing changes either way).
"""

EXAMPLES = r"""
- name: Say which hosts this run holds
  llamafleet.llamacpp.fleet_run:
    hosts: "{{ ansible_play_hosts_all }}"
    inventory_hosts: "{{ query('ansible.builtin.inventory_hostnames', 'llama_fleet') }}"
    gateway_group: llama_fleet_gateway
  delegate_to: localhost
  delegate_facts: true
  run_once: true
"""

RETURN = r"""
ansible_facts:
  description: The run, as C(llama_fleet_run); and C(llama_fleet_rollout) as no rollout (C(order) empty), which
    M(llamafleet.llamacpp.fleet_rollout) replaces when a host has work.
  returned: always
  type: dict
  contains:
    llama_fleet_run:
      description: C(hosts), C(inventory_hosts), C(gateways), C(cordoned) and C(stopping) (the cordoned hosts
        whose C(llama_fleet_cordoned_instances) is C(stop)), each a list of inventory names,
        C(cordon) and C(uncordon) (the request, checked), and C(refusal) (why the fleet's settings refuse the run;
        empty when they do not).
      returned: always
      type: dict
    llama_fleet_rollout:
      description: No rollout yet - C(order) empty, C(serial) C([1]), C(allowed) empty, C(refusal) empty - so that a
        run whose hosts have no work never reads an earlier run's order (a fact cache keeps the facts of
        C(localhost)).
      returned: always
      type: dict
"""
