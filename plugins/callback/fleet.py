# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet
type: stdout
short_description: Ansible's default output, showing only what changed, failed or has a message
version_added: "0.2.0"
description:
  - The default stdout callback, without the lines of tasks that ran unchanged or were skipped. What changed, what
    failed, unreachable hosts, C(debug) messages and the fleet summary, and the recap are shown as usual, so a run
    that changes nothing prints its summary and a few lines per host.
  - Select it with C(ANSIBLE_STDOUT_CALLBACK=llamafleet.llamacpp.fleet) or C(stdout_callback) in C(ansible.cfg).
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - default_callback
  - result_format_callback
"""

from ansible.plugins.callback.default import CallbackModule as DefaultCallback  # noqa: E402

# Modules whose "ok" result is a message meant to be read.
MESSAGE_ACTIONS = frozenset(
    {"debug", "ansible.builtin.debug", "ansible.legacy.debug", "llamafleet.llamacpp.fleet_summary"}
)


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "llamafleet.llamacpp.fleet"

    def __init__(self):
        super().__init__()
        self._show_ok = False

    def get_option(self, k):
        # Skipped and unchanged results are not shown; with both off, the default callback prints a task's
        # banner only when one of its results is.
        if k == "display_skipped_hosts":
            return False
        if k == "display_ok_hosts":
            return self._show_ok
        return super().get_option(k)

    def _with_messages(self, show, result):
        self._show_ok = result._task.action in MESSAGE_ACTIONS
        try:
            show(result)
        finally:
            self._show_ok = False

    def v2_runner_on_ok(self, result):
        self._with_messages(super().v2_runner_on_ok, result)

    def v2_runner_item_on_ok(self, result):
        self._with_messages(super().v2_runner_item_on_ok, result)
