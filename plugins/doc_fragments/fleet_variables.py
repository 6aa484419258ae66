# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The option of the deploy playbook's controller actions that reads their other options from the playbook's
variables (plugin_utils/controller_action.py)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  fleet_variables:
    description:
      - Read each option that the task does not give from the deploy playbook's variable that carries it (the
        option's description names it, C(llama_fleet_*)), when the host defines it and it is not null; templated as
        the task's own argument would be, each distinct string once. An option the task gives wins.
      - The deploy playbook sets it, so that it writes no template per option - Ansible compiles each template each
        time a task meets it, on every run.
    type: bool
    default: false
"""
