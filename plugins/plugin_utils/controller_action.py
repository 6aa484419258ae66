# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of the collection's actions that run on the controller alone (nothing is sent to a host): their
options checked against their argument spec, then ``act`` on the checked options and the task's variables.

An action with ``FLEET_VARIABLES`` also takes the option ``fleet_variables``: set, each option the task does not give
is read from the deploy playbook's variable of its name (``llama_fleet_*``) when the host defines it, templated as
the task's own argument would be, each distinct string once. The deploy playbook then writes no template per
option: Ansible compiles each template each time a task meets it, in the task's own worker, on every run.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import ClassVar

from ansible.plugins.action import ActionBase

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.templated import templated

FLEET_VARIABLES_OPTION = "fleet_variables"


class ControllerAction(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False  # nothing runs on a host
    ARGUMENT_SPEC: ClassVar[Mapping] = {}  # each action's own, set on its class
    # option -> the deploy playbook's variable that gives it under fleet_variables (none: no such option)
    FLEET_VARIABLES: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def argument_spec(cls) -> dict:
        """The options the action takes: its ARGUMENT_SPEC, with fleet_variables when it reads FLEET_VARIABLES. A
        copy: Ansible fills a dict option's default in place, which would change the spec for the next task."""
        spec = copy.deepcopy(dict(cls.ARGUMENT_SPEC))
        if cls.FLEET_VARIABLES:
            spec[FLEET_VARIABLES_OPTION] = {"type": "bool", "default": False}
        return spec

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        if self.FLEET_VARIABLES and self._task.args.get(FLEET_VARIABLES_OPTION):
            self._task.args = {**self.fleet_variables(task_vars), **self._task.args}
        _validation, args = self.validate_argument_spec(argument_spec=self.argument_spec())
        args.pop(FLEET_VARIABLES_OPTION, None)
        result.update(self.act(args, task_vars))
        return result

    def fleet_variables(self, task_vars: Mapping) -> dict:
        """The options FLEET_VARIABLES names, from the variables the host defines (not null), templated."""
        cache: dict = {}
        found = {}
        for option, name in self.FLEET_VARIABLES.items():
            if task_vars.get(name) is not None:
                found[option] = templated(self._templar, task_vars[name], cache)
        return found

    def act(self, args: dict, task_vars: dict) -> dict:
        """The result's fields."""
        raise NotImplementedError
