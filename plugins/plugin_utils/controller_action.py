# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of the collection's actions that run on the controller alone (nothing is sent to a host): their
options checked against their argument spec, then ``act`` on the checked options and the task's variables."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import ClassVar

from ansible.plugins.action import ActionBase


class ControllerAction(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False  # nothing runs on a host
    ARGUMENT_SPEC: ClassVar[Mapping] = {}  # each action's own, set on its class

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        # A copy: Ansible fills a dict option's default in place, which would change the spec for the next task.
        _validation, args = self.validate_argument_spec(argument_spec=copy.deepcopy(self.ARGUMENT_SPEC))
        result.update(self.act(args, task_vars or {}))
        return result

    def act(self, args: dict, task_vars: dict) -> dict:
        """The result's fields."""
        raise NotImplementedError
