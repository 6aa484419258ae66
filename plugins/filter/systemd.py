"""Filters that write plan values into systemd unit files."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_quoting import (
    UnitValueError,
    environment_assignment,
    exec_start,
    quote_exec_word,
)


def _systemd_exec_start(argv):
    try:
        return exec_start([str(a) for a in argv])
    except UnitValueError as err:
        raise AnsibleFilterError(f"systemd_exec_start: {err}") from err


def _systemd_env(value, key):
    try:
        return environment_assignment(str(key), str(value))
    except UnitValueError as err:
        raise AnsibleFilterError(f"systemd_env: {err}") from err


def _systemd_word(value):
    try:
        return quote_exec_word(str(value))
    except UnitValueError as err:
        raise AnsibleFilterError(f"systemd_word: {err}") from err


class FilterModule:
    def filters(self):
        return {
            "systemd_exec_start": _systemd_exec_start,
            "systemd_env": _systemd_env,
            "systemd_word": _systemd_word,
        }
