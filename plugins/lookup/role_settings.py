# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: role_settings
author:
  - llamafleet maintainers (@llamafleet)
version_added: "0.3.0"
short_description: A role's settings, as the role hands them to its modules
description:
  - The mapping a role of this collection passes to its modules as their C(settings) option, read from the host's
    variables - each setting is the role variable of its name (C(llama_server_home) is C(home) of
    C(llama_server)). The roles declare their settings in one table each (the modules' C(settings) option, the
    role's defaults and its argument specification are made from it), and this lookup reads that same table.
  - Each variable is templated as a task's argument would be, each distinct string once. A secret setting (the
    gateway's C(api_keys)) is not in the mapping; the role passes it to its module as an option of its own.
options:
  _terms:
    description: The role, C(llama_server) or C(llama_gateway).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: The settings the llama_server role passes to its modules
  ansible.builtin.debug:
    msg: "{{ query('llamafleet.llamacpp.role_settings', 'llama_server') | first }}"
"""

RETURN = r"""
_raw:
  description: One mapping per role named, of each setting's name to its value.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.role_vars import (  # noqa: E402
    SETTINGS_ROLES,
    role_settings,
)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        del kwargs
        variables = variables or {}
        found = []
        for role in terms:
            if role not in SETTINGS_ROLES:
                raise AnsibleLookupError(f"role_settings: {role!r} is not one of {', '.join(SETTINGS_ROLES)}")
            try:
                found.append(role_settings(self._templar, variables, role))
            except KeyError as err:
                raise AnsibleLookupError(f"role_settings: {err.args[0]} is not defined (the role {role} defines it: "
                                         "is this task in the role?)") from None
        return found
