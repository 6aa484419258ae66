# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's rollout, once, on the controller: the hosts with work in order (the canary first) and the
batch sizes, as the fact ``llama_fleet_rollout`` (plugin_utils/fleet_run.py) that the rollout play reads by name."""

from __future__ import annotations

import copy

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import ROLLOUT_FACT, rollout

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "gateways": {"type": "list", "elements": "str", "default": []},
    "serial": {"type": "raw", "default": [1, "100%"]},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False  # nothing runs on a host

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=copy.deepcopy(ARGUMENT_SPEC))
        hostvars = (task_vars or {}).get("hostvars") or {}
        try:
            planned = rollout(hostvars, args["hosts"], args["gateways"], args["serial"])
        except (TypeError, ValueError) as err:
            result.update(failed=True, msg=f"llama_fleet_serial {args['serial']!r}: {err}; accepted: a number, "
                                           "a percentage (\"25%\") or a list of them, as a play's serial")
            return result
        result.update(changed=False, ansible_facts={ROLLOUT_FACT: planned})
        return result
