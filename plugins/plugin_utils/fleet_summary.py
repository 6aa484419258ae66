"""The fleet summary of playbooks/deploy-llm.yml: one Markdown table, host x instance (the action fleet_summary
writes it; the filters of the same names give it to a play).

Every host of the rollout gets at least one row, so a host that failed or was
never reached is visible in the table instead of silently missing from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_run import JUDGED, STARTED, STATUS

COLUMNS = (
    ("host", "Host"),
    ("instance", "Instance"),
    ("state", "State"),
    ("model", "Model"),
    ("ctx", "Ctx"),
    ("ngl", "GPU layers"),
    ("cache_ram", "Cache RAM (MiB)"),
    ("gpus", "GPUs"),
    ("vram_mib", "VRAM (MiB)"),
    ("ram_mib", "RAM (MiB)"),
    ("changed", "Changed"),
    ("restarted", "Restarted"),
    ("notes_count", "Notes"),
    ("health", "Health"),
    ("detail", "Detail"),
)

KEYS = tuple(key for key, header in COLUMNS)
HEADERS = tuple(header for key, header in COLUMNS)

# What the deploy play records per host (see playbooks/deploy-llm.yml): its status (plugin_utils/fleet_run.py),
# its report rows, and why it failed.
STATUS_VAR = STATUS
REPORT_VAR = role_vars.REPORT
ERROR_VAR = "llama_server_failure"
NOT_DONE = ("failed", "unreachable", "not run")
DETAIL_MAX = 120


def _cell(value) -> str:
    """One Markdown cell: booleans as yes/no, nothing as a dash, pipes and line breaks escaped."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = " ".join(str(value).split())
    if len(text) > DETAIL_MAX:
        text = text[: DETAIL_MAX - 1] + "…"
    return text.replace("|", "\\|")


def _host_vars(hostvars: Mapping, host: str) -> Mapping:
    try:
        found = hostvars[host]
    except (KeyError, TypeError):
        return {}
    return found if isinstance(found, Mapping) else {}


def _first_line(text) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0] if lines else ""


def _why_restarted(entry: Mapping) -> str:
    """The first reason an instance was (or, in check mode, would be) restarted: what ran was not the plan; or the
    files written without a restart, as nothing the engine runs with changed (their comments, or their form)."""
    reasons = entry.get("reasons") or []
    rewritten = entry.get("rewritten") or []
    if not reasons and rewritten:
        return f"rewritten, not restarted: {', '.join(rewritten)} (nothing that runs changed)"
    if not reasons:
        return ""
    if entry.get("restarted") is True:
        return f"restarted: {reasons[0]}"
    if entry.get("would_restart") is True:
        return f"would restart: {reasons[0]}"
    return ""


def fleet_summary_rows(hosts: Iterable[str], hostvars: Mapping) -> list[dict]:
    """One dict per host x instance, with every column of the table; hosts keep their order."""
    if isinstance(hosts, str) or not isinstance(hosts, Iterable):
        raise AnsibleFilterError("fleet_summary_rows: the input must be a list of host names")
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("fleet_summary_rows: hostvars must be a mapping of host name to variables")
    rows: list[dict] = []
    for name in hosts:
        host = str(name)
        host_vars = _host_vars(hostvars, host)
        status = str(host_vars.get(STATUS_VAR, "") or "")
        report = host_vars.get(REPORT_VAR) or []
        error = _first_line(host_vars.get(ERROR_VAR, ""))
        if status == JUDGED:
            # Its batch was never started (the rollout stopped earlier).
            status, error = "not run", error or "not reached: the rollout stopped before its batch"
        elif status in ("", STARTED):
            # Started, then neither finished nor failed a task: the run lost the host.
            status, error = "unreachable", error or "unreachable: the run lost this host"
        for entry in report:
            row = {key: entry.get(key, "") for key in KEYS if key != "host"}
            row["host"] = host
            if entry.get("restarted") is not True and entry.get("would_restart") is True:
                row["restarted"] = "would"  # check mode: a real run would restart it
            row["detail"] = _first_line(entry.get("error", "")) or _why_restarted(entry)
            if status in ("failed", "unreachable") and row.get("state") not in ("failed", "absent"):
                # The host failed after this instance was handled; say so on the row too.
                row["detail"] = row["detail"] or (f"host failed: {error}" if error else "host failed")
            rows.append(row)
        if not report:
            row = dict.fromkeys(KEYS, "")
            row.update(host=host, state=status if status in NOT_DONE else "no instances", detail=error)
            rows.append(row)
    return rows


def deployment_lines(deployments: Iterable[Mapping], hostvars: Mapping) -> list[str]:
    """The placed deployments (fleet_deployments' rows): each replica's host, cards and port, with the state its
    host's report gives that instance (what runs, not what was placed), and the replicas left out."""
    lines = ["", "## Deployments", "", "| deployment | replica | host | cards | port | MiB | state |",
             "|---|---|---|---|---|---|---|"]
    for row in deployments:
        for replica in row.get("replicas") or []:
            name = f"{row['deployment']}-{replica['replica']}"
            report = (hostvars.get(replica["host"]) or {}).get("llama_server_report") or []
            found = [entry for entry in report if isinstance(entry, Mapping) and entry.get("instance") == name]
            state = str(found[-1].get("state") or "?") if found else "not deployed"
            cards = ", ".join(str(card) for card in replica.get("gpus") or []) or "RAM"
            lines.append(f"| {_cell(row['deployment'])} | {replica['replica']} | {_cell(replica['host'])} | "
                         f"{_cell(cards)} | {replica['port']} | {replica['memory_mib']} | {_cell(state)} |")
        for unplaced in row.get("unplaced") or []:
            lines.append(f"| {_cell(row['deployment'])} | {unplaced['replica']} | (unplaced) | - | - | - | "
                         f"{_cell(unplaced['why'])} |")
    return lines


def fleet_summary_markdown(hosts: Iterable[str], hostvars: Mapping, title: str = "llama-server fleet",
                           gateways: Iterable[str] = (), deployments: Iterable[Mapping] = ()) -> str:
    """The Markdown table of fleet_summary_rows, with a heading and a totals line, then a line per gateway
    (``gateway: URL``: the fleet's one endpoint), then the placed deployments when there are any."""
    rows = fleet_summary_rows(hosts, hostvars)
    lines = [f"# {title}", ""]
    lines.append("| " + " | ".join(HEADERS) + " |")
    lines.append("|" + "|".join(["---"] * len(KEYS)) + "|")
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(key)) for key in KEYS) + " |")
    host_names = list(dict.fromkeys(row["host"] for row in rows))
    by_state = {state: sorted({row["host"] for row in rows if row.get("state") == state}) for state in NOT_DONE}
    restarted = sum(1 for row in rows if row.get("restarted") is True)
    would = sum(1 for row in rows if row.get("restarted") == "would")
    changed = sum(1 for row in rows if row.get("changed") is True)
    lines.append("")
    restarts = f"{restarted} restarted" + (f", {would} would restart" if would else "")
    hosts_line = f"failed hosts: {', '.join(by_state['failed']) if by_state['failed'] else 'none'}"
    for state in ("unreachable", "not run"):
        if by_state[state]:
            hosts_line += f"; {state}: {', '.join(by_state[state])}"
    lines.append(f"{len(host_names)} host(s), {len(rows)} row(s); {changed} instance(s) changed, {restarts}; "
                 f"{hosts_line}.")
    lines += [f"gateway: {url}" for url in gateways]
    deployments = list(deployments or [])
    if deployments:
        lines += deployment_lines(deployments, hostvars)
    return "\n".join(lines) + "\n"
