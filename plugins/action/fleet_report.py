# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy playbook's report at the end of a run, on the controller, as one task: the summary (fleet_summary), the
run recorded in the placement ledger (fleet_ledger) and the scrape targets (fleet_metrics_targets), each with the
code of its own action. One task instead of three: each controller task costs the run a worker and the import of
its plugin's code, on every run."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_ledger import LEDGER_SPEC, ledger_result
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_summary import SUMMARY_SPEC, summary_result
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_targets import targets_result
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import read_once

# Each part's options as its own action declares them (their defaults included), the paths renamed by part.
ARGUMENT_SPEC = {
    **{name: SUMMARY_SPEC[name] for name in ("hosts", "gateway_hosts", "title", "deployments", "scope")},
    "summary_path": SUMMARY_SPEC["path"],
    **{name: LEDGER_SPEC[name] for name in ("inventory_hosts", "fleet_name", "placed", "refused", "cordon",
                                            "uncordon")},
    "ledger_path": LEDGER_SPEC["path"],
    "metrics_targets_path": {"type": "str", "default": None},  # none: no targets written
}


def report_parts(args: dict) -> dict[str, dict]:
    """Each part's options, as its own action takes them."""
    parts = {
        "summary": {"hosts": args["hosts"], "path": args["summary_path"], "title": args["title"], "gateways": [],
                    "gateway_hosts": args["gateway_hosts"], "deployments": args["deployments"],
                    "inventory_hosts": args["inventory_hosts"], "scope": args["scope"]},
        "ledger": {"path": args["ledger_path"], "fleet_name": args["fleet_name"],
                   "inventory_hosts": args["inventory_hosts"], "placed": args["placed"], "cordon": args["cordon"],
                   "uncordon": args["uncordon"], "refused": args["refused"]},
    }
    if args["metrics_targets_path"]:
        parts["metrics_targets"] = {"hosts": args["hosts"], "inventory_hosts": args["inventory_hosts"],
                                    "gateways": args["gateway_hosts"], "path": args["metrics_targets_path"],
                                    "validate_only": False}
    return parts


# The options fleet_variables reads from the deploy playbook's variables of these names.
FLEET_VARIABLES = {"summary_path": role_vars.SUMMARY_PATH, "ledger_path": role_vars.LEDGER_PATH,
                   "metrics_targets_path": role_vars.METRICS_TARGETS_PATH}


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    FLEET_VARIABLES = FLEET_VARIABLES

    def act(self, args: dict, task_vars: dict) -> dict:
        hostvars = read_once(task_vars.get("hostvars") or {})  # each host's variables gathered once, for all parts
        parts = report_parts(args)
        mode = {"check_mode": self._task.check_mode, "diff": self._task.diff}
        # Each part runs whatever the others did: a summary that cannot be written still leaves the ledger recorded.
        summary = summary_result(parts["summary"], hostvars)
        ledger = ledger_result(parts["ledger"], hostvars, **mode)
        targets = targets_result(parts["metrics_targets"], hostvars, **mode) if "metrics_targets" in parts else None
        done = {"summary": summary, "ledger": ledger, "metrics_targets": targets}
        result = {**summary, "ledger": ledger, "changed": bool(ledger.get("changed"))}
        if targets is not None:
            result.update(metrics_targets=targets, changed=result["changed"] or bool(targets.get("changed")))
        diffs = [part["diff"] for part in (ledger, targets) if part and part.get("diff")]
        if diffs:
            result["diff"] = diffs
        failures = [f"{name}: {part['msg']}" for name, part in done.items() if part and part.get("failed")]
        if failures:
            # The summary's lines stay in the result (summary), the failure is the message.
            lines = summary["msg"] if isinstance(summary.get("msg"), list) else []
            result.update(failed=True, msg="; ".join(failures), summary=lines)
            result.pop("_ansible_verbose_always", None)
        return result
