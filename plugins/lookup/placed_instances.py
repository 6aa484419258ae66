# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: placed_instances
author:
  - llamafleet maintainers (@llamafleet)
version_added: "0.3.0"
short_description: A host's placed replicas as llama_server instances, from its own llama_fleet_deployments
description:
  - Turns a host's share of the placement (the C(instances) of its entry in the C(hosts) of
    M(llamafleet.llamacpp.fleet_deployments)) into instances of C(llama_server_instances), each with its
    deployment's preset, settings, environment and key.
  - The deployments are the host's own C(llama_fleet_deployments), read from its variables and templated as a task's
    argument would be, but each distinct string once, and only the deployments the share names. A fleet's list
    repeats its templates (C({{ ansible_host }}) in each deployment's settings, the same vault variable as each
    key), and Ansible compiles a template each time it meets one; the filter
    P(llamafleet.llamacpp.placed_instances#filter), which takes the deployments as an argument, pays that for
    each replica of each host.
  - The instances carry their keys. Use it in a task with C(no_log).
options:
  _terms:
    description: The host's share (a list of placements, each with C(deployment), C(replica), C(port) and optionally
      C(name) and C(cuda_visible_devices)).
    type: list
    elements: raw
    required: true
seealso:
  - plugin: llamafleet.llamacpp.placed_instances
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Give this host its replicas (they carry their keys)
  ansible.builtin.set_fact:
    llama_server_placed_instances: "{{ query('llamafleet.llamacpp.placed_instances',
      _llama_fleet_placed.hosts[inventory_hostname].instances) }}"
  no_log: true
"""

RETURN = r"""
_raw:
  description: The instances, in the share's order (with C(query), or C(lookup) and C(wantlist=true)).
  type: list
  elements: dict
"""

from collections.abc import Mapping  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import (  # noqa: E402
    PlacementError,
    placed_instances,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.templated import (  # noqa: E402
    templated,
)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        del kwargs
        share = [entry for term in terms for entry in (term if isinstance(term, list) else [term])]
        if any(not isinstance(entry, Mapping) for entry in share):
            raise AnsibleLookupError("placed_instances: each placement must be a mapping (deployment, replica, port)")
        if not share:
            return []
        raw = (variables or {}).get(role_vars.DEPLOYMENTS)
        if not isinstance(raw, list):
            raise AnsibleLookupError(f"placed_instances: the host has no list of {role_vars.DEPLOYMENTS}")
        cache: dict = {}
        wanted = {str(entry.get("deployment")) for entry in share}
        # A deployment's name is templated first (usually a plain string: nothing to template), then only the
        # deployments the share names, with one cache for the host.
        named = [item for item in raw if isinstance(item, Mapping)
                 and str(templated(self._templar, item.get("name"), cache)) in wanted]
        if not named:
            return []
        try:
            return placed_instances(share, templated(self._templar, named, cache))
        except (PlacementError, KeyError, TypeError, ValueError) as err:
            raise AnsibleLookupError(f"placed_instances: {err}") from err
