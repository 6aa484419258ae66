"""Run one of the collection's action plugins in-process, its modules stood in for by recorded answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from unittest import mock


def run_action(action_module, args: Mapping, answers: Callable | Mapping | list | None = None,
               task_vars: Mapping | None = None, *, check_mode: bool = False, commands: Callable | None = None,
               pipelining: bool = True, templar=None) -> tuple[dict, list]:
    """(the action's result, the (module, args, task_vars) it executed). ``answers``: a function of (module,
    args), a mapping by module name, or a list answered in order. ``commands``: the answer to a command the action
    runs itself (a function of the command and its stdin; default: it fails); each is recorded in ``calls`` as
    ("command", command, stdin), each file sent as ("file", path, data). ``templar``: the action's (the host's
    variables), for an action that templates them itself."""
    task = mock.MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    task.diff = False
    action = action_module.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=templar,
                                        shared_loader_obj=None)
    calls: list = []

    def execute(module_name, module_args, task_vars):
        calls.append((module_name, dict(module_args), task_vars))
        if callable(answers):
            found = answers(module_name, module_args)
        elif isinstance(answers, list):
            found = answers[len(calls) - 1]
        else:
            found = (answers or {})[module_name]
        return json.loads(json.dumps(found))  # a copy, as a module's JSON result would be

    def low_level(command, in_data=None, **_kwargs):
        calls.append(("command", command, in_data))
        return commands(command, in_data) if commands else {"rc": 1, "stdout": "", "stderr": "no such command here"}

    def transfer(path, data):
        calls.append(("file", path, data))
        return path

    action._execute_module = execute
    action._low_level_execute_command = low_level
    action._is_pipelining_enabled = lambda style, wrap_async=False: pipelining
    action._make_tmp_path = lambda remote_user=None: "/tmp/ansible-tmp-x"
    action._transfer_data = transfer
    action._remove_tmp_path = lambda tmp, force=False: None
    return action.run(task_vars=dict(task_vars or {})), calls
