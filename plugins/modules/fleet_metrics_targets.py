#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/fleet_metrics_targets.py; it runs on the controller only.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_metrics_targets
short_description: Write the fleet's Prometheus file_sd scrape targets, on the controller
version_added: "0.3.0"
description:
  - Writes a Prometheus C(file_sd) file listing the C(/metrics) endpoint of every instance that this run found
    running its plan with metrics on (the plan's C(metrics) decision, from the preset's C(METRICS) or the role's
    C(llama_server_metrics)), and the exporter of every gateway that has one (C(llama_gateway_metrics_port)).
  - "Each engine target is labelled C(llamafleet=engine), C(host), C(instance), C(model) (the name its engine lists
    in C(/v1/models)), C(preset) (the instance's named preset) and C(preset_version) (a digest of its layered
    preset, without its port, address, cards and keys: the same wherever it runs). Each gateway target is labelled
    C(llamafleet=gateway) and C(host)."
  - An engine is reached where a gateway reaches it (its own address, or the host's C(ansible_host) when it listens
    on every address); one that listens on loopback only is left out with a note.
  - What this run cannot say keeps what the file had. An instance that does not run its plan (a failed rollout
    restored its previous unit, or check mode previewed a change) keeps its group; a host with no report in this run
    (outside C(--limit), unreachable) keeps its groups while it is still in O(inventory_hosts) or O(gateways). The
    groups of a removed instance, and of a host that left the inventory, go.
  - A file at O(path) whose groups are not labelled C(llamafleet) is not this collection's and is never
    overwritten; the task fails naming it.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
options:
  hosts:
    description: The fleet hosts of this run (their C(llama_server_report), C(llama_server_instances) and
      C(llama_server_presets) are read).
    type: list
    elements: str
    required: true
  inventory_hosts:
    description: Every fleet host of the inventory, within a C(--limit) or not; the file keeps the groups of those
      without a report in this run. Defaults to O(hosts).
    type: list
    elements: str
  gateways:
    description: The fleet's gateway hosts; those that ran the C(llamafleet.llamacpp.llama_gateway) role in this run
      give their C(llama_gateway_metrics_url).
    type: list
    elements: str
    default: []
  path:
    description: The file on the controller (its directory must exist), for a Prometheus C(file_sd_configs) entry.
    type: str
    required: true
  validate_only:
    description: Only check that the file at O(path) is absent or one this collection wrote; write nothing. The deploy
      playbook does this before any host changes.
    type: bool
    default: false
seealso:
  - module: llamafleet.llamacpp.fleet_summary
  - name: Prometheus file-based service discovery
    description: The format of the file.
    link: https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config
attributes:
  check_mode:
    support: full
    details: Says whether the file would change, and writes nothing.
  diff_mode:
    support: full
"""

EXAMPLES = r"""
- name: Write the fleet's scrape targets
  llamafleet.llamacpp.fleet_metrics_targets:
    hosts: "{{ ansible_play_hosts_all }}"
    gateways: "{{ groups['llama_fleet_gateway'] | default([]) }}"
    path: /etc/prometheus/targets/llamafleet.json
  run_once: true
"""

RETURN = r"""
path:
  description: The file.
  returned: always
  type: str
targets:
  description: The groups written (or that would be, in check mode), as Prometheus reads them.
  returned: unless O(validate_only)
  type: list
  elements: dict
  sample:
    - targets: ["10.0.0.11:8080"]
      labels: {llamafleet: engine, host: gpu1, instance: main, model: qwen3-8b, preset: qwen,
               preset_version: 3f2a9c1d0b7e}
notes:
  description: The instances and gateways left out, and why.
  returned: unless O(validate_only)
  type: list
  elements: str
kept:
  description: The hosts whose groups were kept from the file as it was (no report in this run).
  returned: unless O(validate_only)
  type: list
  elements: str
"""
