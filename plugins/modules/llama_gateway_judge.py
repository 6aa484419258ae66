#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/llama_gateway_judge.py; it runs on the controller only.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_gateway_judge
short_description: Judge a gateway from what its host's judge read in the same run, on the controller
version_added: "0.3.0"
description:
  - Says whether the C(llamafleet.llamacpp.llama_gateway) role would change anything on this gateway (RV(current)),
    and why (RV(why)), without a run on the gateway host.
  - The reading is what M(llamafleet.llamacpp.llama_server_host) read of the gateway when it judged the same host in
    this run (its O(llamafleet.llamacpp.llama_server_host#module:read_gateway)) - the digests of the configuration,
    routes file and Lua actions, the servers' states file, HAProxy's unit and the servers out of its rotation. The
    files the role would write are rendered here from the fleet's reports of this run and the gateway's settings
    (its C(llama_gateway_<name>) variables, their defaults where it sets none), as the role's module renders them.
  - A gateway with nothing to do gets the facts the role would record - C(llama_gateway_url),
    C(llama_gateway_metrics_url) and C(llama_gateway_models) - and the deploy playbook does not run the role on it.
  - Without a reading (a gateway that is not one of the run's fleet hosts), with hosts whose servers the gateway
    keeps (O(keep_hosts)), or with settings or routes the role would refuse, the gateway is not current - the role
    runs, and says what is wrong.
  - Nothing runs on a host.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
  - llamafleet.llamacpp.attributes.controller
options:
  fleet_hosts:
    description: The fleet hosts whose instances the gateway routes (the role's C(llama_gateway_fleet_hosts)).
    type: list
    elements: str
    required: true
  keep_hosts:
    description: Fleet hosts whose servers the gateway keeps as it has them (the role's C(llama_gateway_keep_hosts)).
    type: list
    elements: str
    default: []
  cordoned_hosts:
    description: Cordoned fleet hosts (the role's C(llama_gateway_cordoned_hosts)).
    type: list
    elements: str
    default: []
  reading:
    description: What the gateway host's judge read of the gateway in this run (its result's C(gateway)); none when
      it was not read.
    type: dict
seealso:
  - module: llamafleet.llamacpp.llama_gateway_config
  - module: llamafleet.llamacpp.llama_server_host
attributes:
  check_mode:
    details: Judges and records the same facts in check mode (nothing changes either way).
"""

EXAMPLES = r"""
- name: Judge this gateway from what its host's judge read (changes nothing)
  llamafleet.llamacpp.llama_gateway_judge:
    fleet_hosts: "{{ groups['llama_fleet'] }}"
    reading: "{{ _llama_server_judgement.gateway | default(omit) }}"
  register: gateway_judgement

- name: Configure the gateway only when it has work
  ansible.builtin.include_role:
    name: llamafleet.llamacpp.llama_gateway
  when: not gateway_judgement.current
"""

RETURN = r"""
current:
  description: The gateway role would change nothing on this gateway.
  returned: always
  type: bool
why:
  description: Why the role has work on it, first things first (empty when RV(current)).
  returned: always
  type: list
  elements: str
ansible_facts:
  description: When RV(current), what the role records of the gateway.
  returned: when RV(current)
  type: dict
  contains:
    llama_gateway_url:
      description: Where clients reach the gateway.
      type: str
      returned: when RV(current)
    llama_gateway_metrics_url:
      description: The exporter's C(/metrics) (empty without C(llama_gateway_metrics_port)).
      type: str
      returned: when RV(current)
    llama_gateway_models:
      description: The models the gateway routes, each with its C(name), C(backend) and C(replicas), as
        M(llamafleet.llamacpp.llama_gateway_config) returns them.
      type: list
      elements: dict
      returned: when RV(current)
"""
