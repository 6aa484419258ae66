"""Run an Ansible module's main() in-process with given arguments; return its JSON result."""

from __future__ import annotations

import contextlib
import json

import pytest
from ansible.module_utils import basic

try:  # ansible-core 2.19 and later
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # older ansible-core: the module reads its arguments from basic._ANSIBLE_ARGS
    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args=None):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


def run_module(main, args: dict, capsys, check_mode: bool = False, diff: bool = False) -> dict:
    """main() under ``args``; the printed result as a dict (``failed`` set by fail_json)."""
    full = dict(args)
    if check_mode:
        full["_ansible_check_mode"] = True
    if diff:
        full["_ansible_diff"] = True
    capsys.readouterr()
    with patch_module_args(full), pytest.raises(SystemExit):
        main()
    return json.loads(capsys.readouterr().out)
