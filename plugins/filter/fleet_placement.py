# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fleet placement (docs/placement.md): place a fleet described in data, and print the result."""

from __future__ import annotations

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils.fleet_placement import PlacementError, place
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.placement_view import fleet_placement_table, plain


def fleet_place(deployments, hosts, current=None) -> dict:
    """fleet_placement.place on the operator's data; an input it cannot read fails naming its field."""
    try:
        return place(plain(deployments or []), plain(hosts or []), plain(current) if current else None)
    except PlacementError as err:
        raise AnsibleFilterError(f"fleet_place: {err}") from None


def controller_path(path) -> str:
    """An operator's path on the controller, absolute: a relative one is relative to the directory the command runs
    from (the controller's working directory), not to the playbook's (where Ansible's file lookups and a local
    copy's ``dest`` would look)."""
    if not isinstance(path, str) or not path.strip():
        raise AnsibleFilterError(f"controller_path: {path!r} is not a path")
    return os.path.abspath(os.path.expanduser(path))


class FilterModule:
    def filters(self):
        return {"fleet_place": fleet_place, "fleet_placement_table": fleet_placement_table,
                "controller_path": controller_path}
