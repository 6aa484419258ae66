"""The fleet summary of playbooks/deploy-llm.yml: one Markdown table, host x instance.

Every host of the rollout gets at least one row, so a host that failed or was
never reached is visible in the table instead of silently missing from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ansible.errors import AnsibleFilterError

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

# What the deploy play records per host (see playbooks/deploy-llm.yml).
STATUS_VAR = "llama_fleet_status"
REPORT_VAR = "llama_server_report"
ERROR_VAR = "llama_server_failure"
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
        if not status:
            # The play never ran a task there: unreachable, or its batch was never started.
            status, error = "failed", error or "unreachable or not run"
        for entry in report:
            row = {key: entry.get(key, "") for key in KEYS if key != "host"}
            row["host"] = host
            row["detail"] = _first_line(entry.get("error", "")) or ""
            if status == "failed" and row.get("state") not in ("failed", "absent"):
                # The host failed after this instance was handled; say so on the row too.
                row["detail"] = row["detail"] or (f"host failed: {error}" if error else "host failed")
            rows.append(row)
        if not report:
            row = dict.fromkeys(KEYS, "")
            row.update(host=host, state=status if status == "failed" else "no instances", detail=error)
            rows.append(row)
    return rows


def fleet_summary_markdown(hosts: Iterable[str], hostvars: Mapping, title: str = "llama-server fleet") -> str:
    """The Markdown table of fleet_summary_rows, with a heading and a totals line."""
    rows = fleet_summary_rows(hosts, hostvars)
    lines = [f"# {title}", ""]
    lines.append("| " + " | ".join(HEADERS) + " |")
    lines.append("|" + "|".join(["---"] * len(KEYS)) + "|")
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(key)) for key in KEYS) + " |")
    host_names = list(dict.fromkeys(row["host"] for row in rows))
    failed_hosts = sorted({row["host"] for row in rows if row.get("state") == "failed"})
    restarted = sum(1 for row in rows if row.get("restarted") is True)
    changed = sum(1 for row in rows if row.get("changed") is True)
    lines.append("")
    lines.append(
        f"{len(host_names)} host(s), {len(rows)} row(s); {changed} instance(s) changed, "
        f"{restarted} restarted; failed hosts: {', '.join(failed_hosts) if failed_hosts else 'none'}."
    )
    return "\n".join(lines) + "\n"


class FilterModule:
    def filters(self):
        return {
            "fleet_summary_markdown": fleet_summary_markdown,
            "fleet_summary_rows": fleet_summary_rows,
        }
