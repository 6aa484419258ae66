"""The fleet summary of playbooks/deploy-llm.yml: one Markdown table, host x instance (the actions fleet_summary and
fleet_report write it, with ``summary_result``; the filters of the same names give it to a play).

Every host of the rollout gets at least one row, so a host that failed or was
never reached is visible in the table instead of silently missing from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_bytes, write_atomically
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
    ("vram_mib", "Host VRAM (MiB)"),
    ("ram_mib", "Host RAM (MiB)"),
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
NOT_IN_RUN = "not in this run"
NOT_DONE = ("failed", "unreachable", "not run", NOT_IN_RUN)
# The host's own totals: given once, on its first row, so that no reader takes them for an instance's use.
HOST_TOTALS = ("vram_mib", "ram_mib")
DETAIL_MAX = 120
# The judge's reasons (_judgements/running_state.py) that say an engine is new, or was down.
NEW_INSTANCE = ("the unit is not loaded yet", "the container does not exist yet")
DOWN = ("the engine is not running", "the container is not running", "the unit failed",
        "the unit hit its start limit")


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


def _detail(entry: Mapping) -> str:
    """The row's detail: its error, else why it (re)started, else what a stopped instance keeps."""
    found = _first_line(entry.get("error", "")) or _why_restarted(entry)
    if found or entry.get("state") != "stopped":
        return found
    return "stopped by this run; its files are kept" if entry.get("changed") is True else "stopped; its files are kept"


def _why_restarted(entry: Mapping) -> str:
    """The first reason an instance was (or, in check mode, would be) restarted: what ran was not the plan; or the
    files written without a restart, as nothing the engine runs with changed (their comments, or their form)."""
    reasons = entry.get("reasons") or []
    rewritten = entry.get("rewritten") or []
    reloaded = entry.get("reloaded") or []
    if not reasons and reloaded:
        # A router instance: these models' children were stopped to start with their new options; it ran on.
        verb = "reloaded" if entry.get("state") in ("deployed", "failed") else "would reload"
        return f"{verb}, not restarted: {', '.join(reloaded)}"
    if not reasons and rewritten:
        return f"rewritten, not restarted: {', '.join(rewritten)} (nothing that runs changed)"
    if not reasons:
        return ""
    # An engine that did not run before this run was started, not restarted: a new instance, or one that was down
    # (then why it was not running).
    if entry.get("was_running") is False:
        why = next((reason for reason in reasons if reason in NEW_INSTANCE), "")
        why = "a new instance" if why else next((reason for reason in reasons if reason.startswith(DOWN)), "")
        why = why or "it did not run before"
        if entry.get("restarted") is True:
            return f"started: {why}"
        return f"would start: {why}" if entry.get("would_restart") is True else ""
    if entry.get("restarted") is True:
        return f"restarted: {reasons[0]}"
    if entry.get("would_restart") is True:
        return f"would restart: {reasons[0]}"
    return ""


def fleet_summary_rows(hosts: Iterable[str], hostvars: Mapping, inventory_hosts: Iterable[str] = ()) -> list[dict]:
    """One dict per host x instance, with every column of the table; hosts keep their order. The fleet hosts of
    ``inventory_hosts`` that are not in ``hosts`` get one row each, ``not in this run`` (outside --limit or this
    slice: this run changed nothing there)."""
    if isinstance(hosts, str) or not isinstance(hosts, Iterable):
        raise AnsibleFilterError("fleet_summary_rows: the input must be a list of host names")
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("fleet_summary_rows: hostvars must be a mapping of host name to variables")
    hosts = list(hosts)
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
        for position, entry in enumerate(report):
            row = {key: entry.get(key, "") for key in KEYS if key != "host"}
            row["host"] = host
            if position:
                row.update(dict.fromkeys(HOST_TOTALS, ""))
            first = entry.get("was_running") is False  # started, not restarted: it did not run before
            if entry.get("restarted") is True and first:
                row["restarted"] = "started"
            elif entry.get("restarted") is not True and entry.get("would_restart") is True:
                row["restarted"] = "would start" if first else "would"  # check mode: what a real run would do
            row["detail"] = _detail(entry)
            if status in ("failed", "unreachable") and row.get("state") not in ("failed", "absent"):
                # The host failed after this instance was handled; say so on the row too.
                row["detail"] = row["detail"] or (f"host failed: {error}" if error else "host failed")
            rows.append(row)
        if not report:
            row = dict.fromkeys(KEYS, "")
            row.update(host=host, state=status if status in NOT_DONE else "no instances", detail=error)
            rows.append(row)
    return rows + _not_in_run_rows(hosts, inventory_hosts)


def _not_in_run_rows(hosts: Iterable[str], inventory_hosts: Iterable[str]) -> list[dict]:
    listed = {str(name) for name in hosts}
    rows = []
    for name in inventory_hosts or ():
        if str(name) not in listed:
            row = dict.fromkeys(KEYS, "")
            row.update(host=str(name), state=NOT_IN_RUN, detail="outside --limit or this slice: nothing changed there")
            rows.append(row)
    return rows


def _last_rows(hostvars: Mapping, host: str) -> dict:
    """The last row of each instance in the host's report (``llama_server_report``), by instance name."""
    report = (hostvars.get(host) or {}).get("llama_server_report") or []
    return {entry["instance"]: entry for entry in report
            if isinstance(entry, Mapping) and isinstance(entry.get("instance"), str)}


def deployment_lines(deployments: Iterable[Mapping], hostvars: Mapping, scope: Mapping | None = None) -> list[str]:
    """The placed deployments (fleet_deployments' rows): each replica's host, cards and port, with the state its
    host's report gives that instance (what runs, not what was placed), the replicas of unreachable hosts and where
    they went, and the replicas left out (short, in a run that does not read the whole fleet). A replica on a host
    this run did not read is as the ledger has it."""
    scope = scope or {}
    kept_as_recorded = set(scope.get("frozen") or [])
    short = {(entry.get("deployment"), entry.get("replica")) for entry in scope.get("short") or []}
    lines = ["", "## Deployments", "", "| deployment | replica | host | cards | port | MiB | state |",
             "|---|---|---|---|---|---|---|"]
    reports: dict = {}  # per host, its report's last row of each instance: each host's variables are read once
    for row in deployments:
        for replica in row.get("replicas") or []:
            name = replica.get("instance") or f"{row['deployment']}-{replica['replica']}"
            if replica["host"] not in reports:
                reports[replica["host"]] = _last_rows(hostvars, replica["host"])
            found = reports[replica["host"]].get(name)
            if found is not None:
                state = str(found.get("state") or "?")
            else:
                state = "as recorded (host not in this run)" if replica["host"] in kept_as_recorded else "not deployed"
            cards = ", ".join(str(card) for card in replica.get("gpus") or []) or "RAM"
            lines.append(f"| {_cell(row['deployment'])} | {replica['replica']} | {_cell(replica['host'])} | "
                         f"{_cell(cards)} | {replica['port']} | {replica['memory_mib']} | {_cell(state)} |")
        for lost in row.get("lost") or []:
            went = f"placed again on {lost['placed_on']}" if lost.get("placed_on") else "short: no room elsewhere"
            lines.append(f"| {_cell(row['deployment'])} | {lost['replica']} | {_cell(lost['host'])} (unreachable) | "
                         f"- | - | - | {_cell(went)} |")
        for unplaced in row.get("unplaced") or []:
            where = "(short)" if (row["deployment"], unplaced["replica"]) in short else "(unplaced)"
            lines.append(f"| {_cell(row['deployment'])} | {unplaced['replica']} | {where} | - | - | - | "
                         f"{_cell(unplaced['why'])} |")
    return lines


def scope_lines(scope: Mapping | None) -> list[str]:
    """What the placement could not do as usual: the cordoned hosts and what moved off them, the unreachable hosts,
    and the cordoned hosts this run did not read."""
    scope = scope or {}
    lines = []
    moved = scope.get("moved_off") or {}
    for host in scope.get("cordoned") or []:
        off = f"; moved off: {', '.join(moved[host])}" if moved.get(host) else ""
        lines.append(f"cordoned: {host} (takes no replica){off}")
    for host in scope.get("cordoned_elsewhere") or []:
        lines.append(f"cordoned: {host}, not read by this run: its replicas move once a run reaches it")
    lost_hosts = sorted({entry["host"] for entry in scope.get("lost") or []})
    for host in scope.get("unreachable") or []:
        how = ("its replicas were placed again" if host in lost_hosts else
               "its replicas are counted where they were" if host in (scope.get("frozen") or []) else "")
        lines.append(f"unreachable: {host}{'; ' + how if how else ''}")
    return lines


def fleet_summary_markdown(hosts: Iterable[str], hostvars: Mapping, title: str = "llama-server fleet",
                           gateways: Iterable[str] = (), deployments: Iterable[Mapping] = (), *,
                           inventory_hosts: Iterable[str] = (), scope: Mapping | None = None) -> str:
    """The Markdown table of fleet_summary_rows, with a heading and a totals line, then a line per gateway
    (``gateway: URL``: the fleet's one endpoint), then the placed deployments when there are any."""
    rows = fleet_summary_rows(hosts, hostvars, inventory_hosts)
    lines = [f"# {title}", ""]
    lines.append("| " + " | ".join(HEADERS) + " |")
    lines.append("|" + "|".join(["---"] * len(KEYS)) + "|")
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(key)) for key in KEYS) + " |")
    host_names = list(dict.fromkeys(row["host"] for row in rows))
    by_state = {state: sorted({row["host"] for row in rows if row.get("state") == state}) for state in NOT_DONE}
    restarted = sum(1 for row in rows if row.get("restarted") is True)
    started = sum(1 for row in rows if row.get("restarted") == "started")
    would = sum(1 for row in rows if row.get("restarted") == "would")
    would_start = sum(1 for row in rows if row.get("restarted") == "would start")
    changed = sum(1 for row in rows if row.get("changed") is True)
    lines.append("")
    restarts = ((f"{started} started, " if started else "") + f"{restarted} restarted"
                + (f", {would_start} would start" if would_start else "")
                + (f", {would} would restart" if would else ""))
    hosts_line = f"failed hosts: {', '.join(by_state['failed']) if by_state['failed'] else 'none'}"
    for state in ("unreachable", "not run", NOT_IN_RUN):
        if by_state[state]:
            hosts_line += f"; {state}: {', '.join(by_state[state])}"
    lines.append(f"{len(host_names)} host(s), {len(rows)} row(s); {changed} instance(s) changed, {restarts}; "
                 f"{hosts_line}.")
    lines += scope_lines(scope)
    lines += [f"gateway: {url}" for url in gateways]
    deployments = list(deployments or [])
    if deployments:
        lines += deployment_lines(deployments, hostvars, scope)
    return "\n".join(lines) + "\n"


GATEWAY_URL = "llama_gateway_url"  # set by the llama_gateway role

# The summary's options (the action fleet_summary's, and fleet_report's summary part).
SUMMARY_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "path": {"type": "str", "default": "./fleet-summary.md"},
    "title": {"type": "str", "default": "llama-server fleet"},
    "gateways": {"type": "list", "elements": "str", "default": []},
    "gateway_hosts": {"type": "list", "elements": "str", "default": []},
    "deployments": {"type": "list", "elements": "dict", "default": []},
    "inventory_hosts": {"type": "list", "elements": "str", "default": []},
    "scope": {"type": "dict", "default": None},
}


def write_if_different(path: str, text: str) -> None:
    """Write the summary when its content differs; a missing directory is an error (a wrong path), not made."""
    data = text.encode()
    if read_bytes(path) != data:
        write_atomically(path, data, 0o644, make_dirs=False)


def summary_result(args: Mapping, hostvars: Mapping) -> dict:
    """The summary of ``args`` (SUMMARY_SPEC's options, checked) from the hosts' variables (each read once), written
    to ``path`` (none: not written), as an action's result. A summary is a report, not managed state: never
    changed."""
    # A gateway host's URL is known once its role ran (llama_gateway_url); one that never got there has none.
    urls = [*args["gateways"],
            *(url for name in args["gateway_hosts"] if (url := (hostvars.get(name) or {}).get(GATEWAY_URL)))]
    text = fleet_summary_markdown(args["hosts"], hostvars, args["title"], urls, args["deployments"],
                                  inventory_hosts=args["inventory_hosts"], scope=args["scope"])
    if args["path"]:
        try:
            write_if_different(args["path"], text)
        except OSError as err:
            return {"failed": True, "msg": f"cannot write the fleet summary to {args['path']}: {err}"}
    # Shown like a debug message by the stdout callbacks, without -v: the summary is what the run is for.
    return {"changed": False, "msg": text.splitlines(), "path": args["path"], "_ansible_verbose_always": True}
