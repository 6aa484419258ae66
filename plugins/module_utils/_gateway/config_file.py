# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway host's files, decided from their current text: HAProxy's configuration and its routes file.

Pure: texts in, texts out; ``_converge/gateway.py`` reads and writes them. The routes file
(``<config_path>.routes.json``, root-only like the configuration) is what the configuration routes, with the
engines' keys: a host in ``keep_hosts`` (nothing in this run says what it runs) keeps the servers it lists. A
configuration this collection did not write (it lacks HEADER) is copied aside once before it is replaced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes, haproxy_config
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import Routes, Server

HEADER = "Written by llamafleet.llamacpp (llama_gateway) from the fleet's running instances; edits are replaced."
MASK = "********"


def routes_path(config_path: str) -> str:
    return f"{config_path}.routes.json"


def foreign_copy_path(config_path: str) -> str:
    return f"{config_path}.before-llamafleet"


def kept_routes(routes_before: str, servers: Sequence[Mapping], server_keys: Mapping[str, str],
                keep_hosts: Iterable[str]) -> tuple[list[Mapping], dict[str, str]]:
    """The server dicts and keys to route: the given ones, but for the hosts in ``keep_hosts``, which keep those of
    the routes file (``routes_before``, its text: "" when there is none, and text that is not JSON counts as none).
    """
    keep = set(keep_hosts)
    entries = [entry for entry in servers if entry.get("host") not in keep]
    keys = {label: key for label, key in server_keys.items() if label.split(":", 1)[0] not in keep}
    if keep:
        try:
            before = json.loads(routes_before or "{}")
        except ValueError:
            before = {}
        kept = [entry for entry in before.get("servers") or [] if entry.get("host") in keep]
        entries += kept
        keys.update({label: key for label, key in (before.get("server_keys") or {}).items()
                     if label.split(":", 1)[0] in keep})
        # The hosts keep the places they had in the file (new ones after, in the given order): a run that keeps some
        # hosts writes what a run over the whole fleet writes, not the kept hosts moved to the end.
        if kept:
            places: dict = {}
            for entry in [*(before.get("servers") or []), *entries]:
                places.setdefault(entry.get("host"), len(places))
            entries.sort(key=lambda entry: places[entry.get("host")])
    return entries, keys


def routes_text(servers: Iterable[Server]) -> str:
    """The routes file: the servers (Server.as_dict) and their keys by ``host:instance``."""
    servers = list(servers)
    return json.dumps({"servers": [server.as_dict() for server in servers],
                       "server_keys": {server.label: server.key for server in servers if server.key}},
                      sort_keys=True, indent=1)


def keeps_foreign_copy(config_before: str, copy_exists: bool) -> bool:
    """Whether the configuration about to be replaced is copied aside first: it was not written here, and no copy
    was made before (the first foreign file is the one worth keeping; a later one is an edit of ours)."""
    return bool(config_before) and not config_before.startswith(f"# {HEADER}") and not copy_exists


def routes_keys(routes_before: str) -> list[str]:
    """The engines' keys a routes file holds (its text; none when it is not a routes file)."""
    try:
        before = json.loads(routes_before or "{}")
    except ValueError:
        return []
    keys = before.get("server_keys") if isinstance(before, dict) else None
    return [str(key) for key in keys.values()] if isinstance(keys, dict) else []


def masked(text: str, keys: Iterable[str]) -> str:
    for key in keys:
        if key:
            text = text.replace(key, MASK)
    return text


@dataclass(frozen=True)
class GatewayFiles:
    """What the gateway's two files say."""

    config: str  # HAProxy's configuration
    routes_file: str
    routes: Routes


def gateway_files(settings, routes_before: str, *, servers: Sequence[Mapping], server_keys: Mapping[str, str],
                  keep_hosts: Iterable[str], notes: Iterable[str]) -> tuple[GatewayFiles | None, list[str]]:
    """The files' texts from the settings (_gateway/settings.py), the routes file's text, the fleet's servers
    (Server.as_dict) and keys (by ``host:instance``), the hosts that keep what the routes file has and the notes for
    the configuration's header; or None and why the gateway cannot be configured."""
    entries, keys = kept_routes(routes_before, servers, server_keys, keep_hosts)
    found, errors = fleet_routes.servers_from_dicts(entries, keys)
    routes = fleet_routes.routes(found, notes)
    errors += routes.errors
    if errors:
        return None, errors
    header = [HEADER, *(note.replace("\n", " ") for note in routes.notes)]
    return GatewayFiles(config=haproxy_config.render(settings, routes, header), routes_file=routes_text(found),
                        routes=routes), []


def routed_models(routes: Routes) -> list[dict]:
    """The models as the module returns them: each ``name``, ``backend`` and ``replicas`` (host/instance)."""
    return [{"name": model.name, "backend": model.backend,
             "replicas": [f"{server.host}/{server.instance}" for server in model.servers]}
            for model in routes.models]
