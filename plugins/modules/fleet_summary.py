#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/fleet_summary.py; it runs on the controller only.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_summary
short_description: Print and write the fleet's llama-server summary, on the controller
version_added: "0.3.0"
description:
  - Builds the Markdown table of C(llamafleet.llamacpp.fleet_summary_markdown) from the hosts' variables
    (C(llama_fleet_status), C(llama_server_report), C(llama_server_failure)), returns it as RV(msg) lines for the
    output, and writes it to O(path) on the controller when its content differs.
  - Nothing runs on the hosts, and no module is sent anywhere. Check mode writes the file too, as a preview's
    summary is wanted as well.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
options:
  hosts:
    description: The hosts of the table, in order.
    type: list
    elements: str
    required: true
  path:
    description: Where the Markdown goes on the controller; empty writes nothing.
    type: str
    default: ./fleet-summary.md
  title:
    description: The table's heading.
    type: str
    default: llama-server fleet
  gateways:
    description:
      - The URLs of the fleet's gateways, each printed after the table on a line of its own (C(gateway) then the
        URL).
    type: list
    elements: str
    default: []
  gateway_hosts:
    description:
      - The fleet's gateway hosts; the URL of each one the C(llamafleet.llamacpp.llama_gateway) role configured
        (its fact C(llama_gateway_url)) is printed like those of O(gateways), after them.
    type: list
    elements: str
    default: []
  deployments:
    description:
      - The placed deployments (RV(llamafleet.llamacpp.fleet_deployments#module:deployments)), printed after the
        gateways - each replica's host, cards, port and need, with the state its host's report gives it, and the
        replicas left out.
    type: list
    elements: dict
    default: []
  inventory_hosts:
    description: Every host of the fleet; those not in O(hosts) get a row C(not in this run) (outside C(--limit) or
      this slice of a job - nothing changed there), never C(failed).
    type: list
    elements: str
    default: []
  scope:
    description: What the placement could do on each host (RV(llamafleet.llamacpp.fleet_deployments#module:scope)) -
      the summary names the cordoned hosts and what moved off them, the unreachable hosts and whether their
      replicas were placed again, and marks the replicas a partial run left short.
    type: dict
seealso:
  - module: llamafleet.llamacpp.llama_server_host
attributes:
  check_mode:
    details: Writes the summary in check mode too (it is a report of the run, not managed state).
"""

EXAMPLES = r"""
- name: Summarise the fleet
  llamafleet.llamacpp.fleet_summary:
    hosts: "{{ ansible_play_hosts_all }}"
    path: ./fleet-summary.md
  run_once: true
"""

RETURN = r"""
msg:
  description: The summary's lines.
  returned: always
  type: list
  elements: str
path:
  description: The file written (empty when none was asked for).
  returned: always
  type: str
"""
