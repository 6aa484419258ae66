#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/fleet_report.py; it runs on the controller only.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_report
short_description: Write the fleet's report at the end of a deploy run - summary, ledger and scrape targets
version_added: "0.3.0"
description:
  - The deploy playbook's last step, also run in the rescue of a host that fails. In one task on the controller, it
    does what three actions do, with their code
    - M(llamafleet.llamacpp.fleet_summary) prints and writes the summary table to O(summary_path);
    - M(llamafleet.llamacpp.fleet_ledger) records the run in the placement ledger at O(ledger_path) (nothing of a
      refused run);
    - M(llamafleet.llamacpp.fleet_metrics_targets) writes the scrape targets to O(metrics_targets_path), when given.
  - Each part runs whatever the others did. A part that fails (a file that cannot be written, a ledger or targets
    file that is not this collection's, left as it is) fails the task, naming the part; the summary's lines are
    then in RV(summary).
  - One task instead of three because each task of a run costs it a worker process and the import of the plugin's
    code, on every run, a no-op included.
  - Nothing runs on a host.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.fleet_variables
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
options:
  hosts:
    description: The run's hosts (the summary's rows, and the hosts whose engines are scrape targets), in order.
    type: list
    elements: str
    required: true
  inventory_hosts:
    description: Every host of the fleet, whatever C(--limit) leaves out - the summary's C(not in this run) rows, the
      ledger's hosts, and the scrape targets' hosts whose groups are kept when this run did not read them.
    type: list
    elements: str
    required: true
  gateway_hosts:
    description: The fleet's gateway hosts - the URL of each one the C(llamafleet.llamacpp.llama_gateway) role
      configured is printed after the table, and its exporter is a scrape target.
    type: list
    elements: str
    default: []
  summary_path:
    description: Where the summary's Markdown goes on the controller (C(llama_fleet_summary_path)); empty writes none
      (M(llamafleet.llamacpp.fleet_summary)'s O(llamafleet.llamacpp.fleet_summary#module:path)).
    type: str
    default: ./fleet-summary.md
  title:
    description: The summary table's heading.
    type: str
    default: llama-server fleet
  deployments:
    description: The placed deployments (RV(llamafleet.llamacpp.fleet_deployments#module:deployments)), printed after
      the gateways.
    type: list
    elements: dict
    default: []
  scope:
    description: What the placement could do on each host (RV(llamafleet.llamacpp.fleet_deployments#module:scope)).
    type: dict
  ledger_path:
    description: The placement ledger on the controller (C(llama_fleet_ledger_path);
      M(llamafleet.llamacpp.fleet_ledger)'s O(llamafleet.llamacpp.fleet_ledger#module:path)).
    type: str
    default: ./fleet-ledger.json
  fleet_name:
    description: The fleet's name, which the ledger carries.
    type: str
    default: llama_fleet
  placed:
    description: The placement's share of each host this run read
      (RV(llamafleet.llamacpp.fleet_deployments#module:ledger)); none when the run places nothing.
    type: dict
  refused:
    description: Whether the run was refused before any host changed; nothing of it is then recorded in the ledger.
    type: bool
    default: false
  cordon:
    description: The maintenance request's hosts to cordon, recorded in the ledger.
    type: list
    elements: str
    default: []
  uncordon:
    description: The maintenance request's hosts to open again.
    type: list
    elements: str
    default: []
  metrics_targets_path:
    description: The fleet's Prometheus scrape targets file (C(llama_fleet_metrics_targets_path);
      M(llamafleet.llamacpp.fleet_metrics_targets)'s O(llamafleet.llamacpp.fleet_metrics_targets#module:path)); none
      or empty to write none.
    type: str
seealso:
  - module: llamafleet.llamacpp.fleet_summary
  - module: llamafleet.llamacpp.fleet_ledger
  - module: llamafleet.llamacpp.fleet_metrics_targets
attributes:
  check_mode:
    support: full
    details: Prints and writes the summary (a report of the run); says whether the ledger and the targets would
      change, and writes neither.
  diff_mode:
    support: full
    details: Returns the changes of the ledger and of the targets file, as a list.
"""

EXAMPLES = r"""
- name: Write the fleet's report
  llamafleet.llamacpp.fleet_report:
    hosts: "{{ ansible_play_hosts_all }}"
    inventory_hosts: "{{ query('ansible.builtin.inventory_hostnames', 'llama_fleet') }}"
    summary_path: ./fleet-summary.md
    ledger_path: ./fleet-ledger.json
    metrics_targets_path: /etc/prometheus/targets/llamafleet.json
  run_once: true
"""

RETURN = r"""
msg:
  description: The summary's lines; the failure, naming its part, when a part failed.
  returned: always
  type: raw
path:
  description: The summary's file (empty when none was asked for).
  returned: unless the summary failed
  type: str
summary:
  description: The summary's lines, when a part failed.
  returned: failure
  type: list
  elements: str
ledger:
  description: M(llamafleet.llamacpp.fleet_ledger)'s result - C(changed), C(path), C(hosts), C(cordoned), or C(msg).
  returned: always
  type: dict
metrics_targets:
  description: M(llamafleet.llamacpp.fleet_metrics_targets)'s result - C(changed), C(path), C(targets), C(notes),
    C(kept).
  returned: when O(metrics_targets_path) is given
  type: dict
"""
