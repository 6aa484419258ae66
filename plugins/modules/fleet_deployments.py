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
  - "The hosts this run does not read count as the placement ledger (O(ledger_path)) has them: a host outside
    O(run_hosts) (C(--limit), another slice of a job) and one whose judge failed keep the replicas they run and take
    nothing new; a host in O(run_hosts) that its judge lost (unreachable) has its replicas placed again on the
    others (O(unreachable)=C(replace)) or kept where they were (C(keep)). A host outside the run that the ledger has
    no record of refuses the run: what it runs is not known."
  - A host with C(llama_fleet_cordoned) true (or cordoned in the ledger, when the variable is not set) takes no
    replica, and its replicas move elsewhere.
  - A replica with no room fails the task, naming its need and the best candidate's free memory, when the run reads
    the whole fleet, or when the replica runs now on a host that would lose it (a cordon with no room elsewhere).
    In a run that does not read the whole fleet, the others are reported short (C(scope.short)) and the run goes on.
    A deployment whose need is unknown, a damaged or foreign ledger, an unknown O(unreachable) and a cordon that is
    not a boolean fail the task too. Nothing runs on a host, and nothing is written.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.fleet_variables
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
  - llamafleet.llamacpp.fleet_ledger
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
    description: Every host of the fleet, within C(--limit) or not. Defaults to O(hosts).
    type: list
    elements: str
  run_hosts:
    description: The hosts this run holds (within C(--limit)); those of them not in O(hosts) were lost by the judge
      or failed there (their C(llama_fleet_status) says which). Defaults to O(hosts).
    type: list
    elements: str
  cordoned:
    description: The fleet hosts cordoned in this run (the C(cordoned) of M(llamafleet.llamacpp.fleet_run)'s fact).
      When not given, each host's C(llama_fleet_cordoned), else the ledger's record.
    type: list
    elements: str
  max_surge:
    description:
      - How many start-first copies of a deployment's replicas may run at once (C(llama_fleet_max_surge), or the
        deployment's own C(max_surge)) - a whole number, or a percentage of its replicas, rounded up. Default 0.
      - A running replica whose plan changes, on a host this run reads and that is not cordoned, gets a new copy
        placed where there is room now - its own host (under its second name, C(<deployment>-<replica>-b) or
        back) or another - with the running copy's memory still counted; the running copy is removed once the new
        one serves. One without room restarts where it runs. Lowest replica numbers first.
    type: raw
  max_unavailable:
    description: The fleet's C(llama_fleet_max_unavailable), read with O(max_surge) (both at 0 are refused).
    type: raw
seealso:
  - module: llamafleet.llamacpp.llama_server_host
  - module: llamafleet.llamacpp.fleet_ledger
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
scope:
  description:
    - What the run could do on each host - C(read), C(outside) (not in this run), C(unreachable), C(failed),
      C(frozen) (kept as the ledger has them), C(cordoned) and C(cordoned_elsewhere) (cordoned, not read),
      C(moved_off) (by cordoned host, the replicas that move off it, as C(name to host)), C(lost) (each replica of an
      unreachable host - deployment, replica, host, C(placed_on), empty when it found no room) and C(short) (the
      unplaced replicas this partial run reports instead of refusing).
  returned: unless refused before placing
  type: dict
ledger:
  description: The placed replicas each read host runs once its rollout is done, for
    M(llamafleet.llamacpp.fleet_ledger).
  returned: unless refused before placing
  type: dict
hosts:
  description:
    - Each host's share - C(instances) (the replicas it runs after the rollout - name, deployment, replica, port,
      cuda_visible_devices), C(remove) (the placed replicas it runs now and no longer keeps), C(moved_to) (of
      those, each one that has a new copy - its C(host), C(instance), and whether that host is C(frozen), kept as it
      is by this run - by name) and C(changed).
  returned: always
  type: dict
"""
