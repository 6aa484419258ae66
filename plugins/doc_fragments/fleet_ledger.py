# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of the actions that read the placement ledger (fleet_run, fleet_deployments)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  unreachable:
    description: What the placement does with the replicas of a host the run lost - C(replace) (the default; placed
      again on the reachable hosts where there is room) or C(keep) (counted where they were, for a short, planned
      outage). The deploy playbook gives C(llama_fleet_unreachable).
    type: raw
  ledger_path:
    description: The placement ledger (M(llamafleet.llamacpp.fleet_ledger), C(llama_fleet_ledger_path)); read, never
      written here.
    type: str
    default: ./fleet-ledger.json
  fleet_name:
    description: The fleet's name, which the ledger must carry (the deploy playbook gives C(llama_fleet_name), by
      default its host pattern C(llama_fleet_hosts)).
    type: str
    default: llama_fleet
"""
