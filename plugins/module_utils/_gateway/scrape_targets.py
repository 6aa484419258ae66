# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's Prometheus scrape targets: a ``file_sd`` file with every engine's ``/metrics`` and every gateway's
exporter.

Pure. An engine is listed when this run's report says it runs its plan (``runs_plan``) and that plan serves
``/metrics`` (the plan's ``metrics`` decision); it is reached where a gateway reaches it (fleet_routes). What this
run cannot say keeps what the file had: an instance that does not run its plan (rolled back, or previewed in check
mode), a replica the run was to remove that no row names yet (the running copy a start-first copy was to replace,
when the rollout stopped before the removals) and a host with no report (outside ``--limit``, unreachable); a host
that left the inventory loses its targets. Every group carries the label ``llamafleet`` (``engine`` or
``gateway``): a file whose groups lack it was not written here and is never overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import (
    served_rows,
    server_from_row,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.listen import loopback_only

ROLE_LABEL = "llamafleet"
ENGINE, GATEWAY = "engine", "gateway"
FILE_FORM = ('a JSON list of {"targets": [...], "labels": {...}} groups, each labelled llamafleet=engine or '
             "llamafleet=gateway")


class TargetsFileError(ValueError):
    """A previous file that this collection did not write (or cannot read), naming what is wrong."""


def _target(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def read_previous(text: str | None) -> list[dict]:
    """The groups of the file as it is ("" or None: no file). Raises TargetsFileError for any other file."""
    if not (text or "").strip():
        return []
    try:
        groups = json.loads(text)
    except ValueError as err:
        raise TargetsFileError(f"it is not JSON ({err}); expected {FILE_FORM}") from None
    if not isinstance(groups, list):
        raise TargetsFileError(f"it holds a {type(groups).__name__}; expected {FILE_FORM}")
    for position, group in enumerate(groups):
        labels = group.get("labels") if isinstance(group, dict) else None
        targets = group.get("targets") if isinstance(group, dict) else None
        if (not isinstance(labels, dict) or labels.get(ROLE_LABEL) not in (ENGINE, GATEWAY)
                or not isinstance(targets, list) or not all(isinstance(t, str) for t in targets)
                or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())):
            raise TargetsFileError(f"its group {position} is not one this collection writes; expected {FILE_FORM}")
    return groups


def engine_group(host: str, host_address: str, row: Mapping, preset: Mapping) -> tuple[dict | None, str]:
    """The scrape group of a report row that runs its plan, or why it has none ("" when there is nothing to say: its
    plan serves no metrics)."""
    if not row.get("metrics"):
        return None, ""
    where = f"{host}/{row.get('instance', '?')}"
    if loopback_only(str(row.get("host") or "")):
        return None, (f"{where} is left out of the scrape targets: it listens on {row.get('host')} only, which no "
                      "Prometheus on another host reaches")
    server, why = server_from_row(host, host_address, row)
    if server is None:
        return None, why.removeprefix("error: ").replace("is left out:", "is left out of the scrape targets:")
    labels = {ROLE_LABEL: ENGINE, "host": host, "instance": server.instance, "model": server.model,
              "preset": str(preset.get("preset") or ""), "preset_version": str(preset.get("version") or "")}
    if row.get("router_model"):
        # A router's model: its child's /metrics through the router, which never loads a model for a scrape (an
        # unloaded one answers 400, and the target reads down until a request loads it).
        labels.update(__param_model=str(row["router_model"]), __param_autoload="false")
    return {"targets": [_target(server.address, server.port)], "labels": labels}, ""


def gateway_group(host: str, metrics_url: str) -> tuple[dict | None, str]:
    """The scrape group of a gateway's exporter (``metrics_url`` as the llama_gateway role records it)."""
    if not metrics_url:
        return None, ""
    parts = urlsplit(metrics_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or not parts.port:
        return None, f"{host}: its metrics URL {metrics_url!r} is not http(s)://ADDRESS:PORT/PATH"
    labels = {ROLE_LABEL: GATEWAY, "host": host}
    if parts.scheme == "https":
        labels["__scheme__"] = "https"
    if parts.path and parts.path != "/metrics":
        labels["__metrics_path__"] = parts.path
    return {"targets": [_target(parts.hostname, parts.port)], "labels": labels}, ""


def _order(group: Mapping) -> tuple:
    labels = group["labels"]
    return (labels[ROLE_LABEL], labels.get("host", ""), labels.get("instance", ""), group["targets"])


def _engine_groups(hosts: Iterable[Mapping]) -> tuple[list, list, set, set]:
    """(groups, notes, hosts this run reported on, (host, instance) pairs that run what they ran before: rolled
    back, previewed, or a replica to remove whose removal did not come)."""
    groups, notes, reported, unchanged = [], [], set(), set()
    for host in hosts:
        name, report = str(host["name"]), host.get("report")
        if report is None:
            continue
        reported.add(name)
        named = {str(row.get("instance")) for row in report}
        unchanged.update((name, str(instance)) for instance in host.get("removing") or [] if str(instance) not in named)
        for row in [served for entry in report for served in served_rows(entry)]:
            if row.get("state") in ("absent", "stopped"):
                continue  # nothing to scrape: removed, or stopped on purpose
            if not row.get("runs_plan"):
                unchanged.add((name, str(row.get("instance"))))
                continue
            group, why = engine_group(name, str(host.get("address") or name), row, (host.get("presets") or {}).get(
                row.get("router_instance") or row.get("instance")) or {})
            notes += [why] if why else []
            groups += [group] if group is not None else []
    return groups, notes, reported, unchanged


def _gateway_groups(gateways: Iterable[Mapping]) -> tuple[list, list, set]:
    """(groups, notes, gateways that ran in this run)."""
    groups, notes, ran = [], [], set()
    for gateway in gateways:
        name, url = str(gateway["name"]), gateway.get("metrics_url")
        if url is None:
            continue
        ran.add(name)
        group, why = gateway_group(name, str(url))
        notes += [why] if why else []
        groups += [group] if group is not None else []
    return groups, notes, ran


def scrape_targets(hosts: Iterable[Mapping], gateways: Iterable[Mapping], previous: list[dict] | None = None,
                   inventory: Iterable[str] = ()) -> dict:
    """The groups of the targets file.

    ``hosts``: the fleet hosts of this run, each ``name``, ``address`` (where they are reached), ``report`` (this
    run's rows; None when the host has none), ``presets`` (by instance: ``preset``, its name, and ``version``) and
    ``removing`` (the placed replicas this run was to remove from it: its share's ``remove``).
    ``gateways``: each ``name`` and ``metrics_url`` (None when the gateway did not run in this run; "" without an
    exporter). ``previous``: the file's groups (read_previous).

    A row that runs its plan gives its group (or none, without metrics); a row that does not (failed and rolled
    back, or previewed in check mode) still runs what it ran before, so it keeps its previous group; so does a
    replica in ``removing`` that no row names (its removal did not come: the rollout stopped before it, or its new
    copy does not serve yet). Any other instance of a reported host that no row names has no group: the report says
    all that runs there. A host or gateway with nothing new in this run keeps its previous groups while it is in
    ``inventory`` (every fleet and gateway host the inventory has); one that left the inventory loses them.

    Returns ``groups`` (sorted), ``notes`` (what was left out) and ``kept`` (the hosts with groups kept as they were).
    """
    groups, notes, reported, unchanged = _engine_groups(hosts)
    gateway_groups, gateway_notes, ran = _gateway_groups(gateways)
    groups, notes = groups + gateway_groups, notes + gateway_notes
    fresh = {(ENGINE, name) for name in reported} | {(GATEWAY, name) for name in ran}
    known = set(inventory)
    kept = set()
    for group in previous or []:
        labels = group["labels"]
        owner = (labels[ROLE_LABEL], labels.get("host", ""))
        stays = owner not in fresh and owner[1] in known
        if stays or (owner[0] == ENGINE and (owner[1], labels.get("instance", "")) in unchanged):
            groups.append({"targets": list(group["targets"]), "labels": dict(labels)})
            kept.add(owner[1])
    return {"groups": sorted(groups, key=_order), "notes": notes, "kept": sorted(kept)}


def targets_text(groups: list[dict]) -> str:
    """The file's text: stable, so that an unchanged fleet writes the same bytes."""
    return json.dumps(groups, indent=2, sort_keys=True) + "\n"
