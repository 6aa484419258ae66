# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the collection's actions run their module on the target: one call, under the planning venv's Python."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import venv_python

__all__ = ["module_result", "venv_python"]


def module_result(action, module: str, module_args: dict, task_vars: dict, python: str = "") -> dict:
    """The module's result on the action's host, run by ``python`` when given; its invocation is left out (it would
    repeat the options, which the module masked already)."""
    use_vars = dict(task_vars)
    if python:
        use_vars["ansible_python_interpreter"] = python
    found = action._execute_module(module_name=module, module_args=module_args, task_vars=use_vars)
    found.pop("invocation", None)
    return found
