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
    failed, unreachable hosts, C(debug) messages and the recap are shown as usual, so a run that changes nothing
    prints its summary and a few lines per host.
  - The fleet summary (M(llamafleet.llamacpp.fleet_summary), M(llamafleet.llamacpp.fleet_report)) is printed as its
    Markdown text, one table line per instance, with the file it was written to; not as a JSON list of lines.
  - Select it with C(ANSIBLE_STDOUT_CALLBACK=llamafleet.llamacpp.fleet) or C(stdout_callback) in C(ansible.cfg).
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - default_callback
  - result_format_callback
"""

from ansible.plugins.callback.default import CallbackModule as DefaultCallback  # noqa: E402

SUMMARY_ACTIONS = frozenset({"llamafleet.llamacpp.fleet_summary", "llamafleet.llamacpp.fleet_report"})
# Modules whose "ok" result is a message meant to be read.
MESSAGE_ACTIONS = frozenset({"debug", "ansible.builtin.debug", "ansible.legacy.debug"}) | SUMMARY_ACTIONS


def _task_of(result):
    # ansible-core 2.19 names them task, host and result; 2.16 to 2.18 only _task, _host and _result.
    return getattr(result, "task", None) or result._task


def _host_of(result):
    return getattr(result, "host", None) or result._host


def _data_of(result):
    data = getattr(result, "result", None)
    return data if data is not None else result._result


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
        self._show_ok = _task_of(result).action in MESSAGE_ACTIONS
        try:
            show(result)
        finally:
            self._show_ok = False

    def _show_summary(self, result):
        """The summary's Markdown as it is in its file: a table reads as a table, not as quoted JSON strings."""
        task = _task_of(result)
        if self._last_task_banner != task._uuid:
            self._print_task_banner(task)
        data = _data_of(result)
        path = data.get("path")
        written = f", written to {path}" if path else ""
        self._display.display(f"ok: [{_host_of(result).get_name()}] fleet summary{written}:")
        self._display.display("\n".join(str(line) for line in data["msg"]))

    def v2_runner_on_ok(self, result):
        task = _task_of(result)
        if task.action in SUMMARY_ACTIONS and isinstance(_data_of(result).get("msg"), list) and not task.loop:
            self._show_summary(result)
            return
        self._with_messages(super().v2_runner_on_ok, result)

    def v2_runner_item_on_ok(self, result):
        self._with_messages(super().v2_runner_item_on_ok, result)
