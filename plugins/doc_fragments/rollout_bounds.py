# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's bounds, as the actions that read them take them (fleet_run checks them, fleet_rollout applies them)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  max_unavailable:
    description:
      - How many of a model's replicas a rollout may take out of the gateways' rotation at once
        (C(llama_fleet_max_unavailable)) - a whole number from 0 to 10000, or a percentage of the model's serving
        replicas from C(0%) to C(100%), rounded down but at least 1. A model with two or more replicas never has all
        of them out at once. Default C(25%).
      - Words, negative numbers and percentages over 100 are refused, naming the variable.
    type: raw
  max_surge:
    description:
      - How many new copies of a model's placed replicas may start before their old copies go
        (C(llama_fleet_max_surge)) - a whole number or a percentage, rounded up. Default 0. Both this and
        O(max_unavailable) at 0 are refused - no rollout could make progress.
    type: raw
  deployments:
    description: The fleet's deployments (C(llama_fleet_deployments)); a deployment's own C(max_unavailable) and
      C(max_surge) override the fleet's for its replicas, and are checked the same way.
    type: raw
"""
