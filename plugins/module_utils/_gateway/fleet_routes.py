# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the gateway routes: the fleet's running instances grouped by the model name their engine lists.

Pure. The rows come from the fleet's report (what runs: the engine's ``/props`` gives its slot count and model
name), each with the address the gateway reaches its host at. An instance that cannot take traffic through a
gateway (failed, absent, listening on loopback or a UNIX socket) is left out with a note; a model whose replicas
disagree on their API key is refused, since HAProxy sets one Authorization header per backend.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.secrets import api_key_problem
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.listen import listen_addresses, loopback_only

# A model name as it goes into the proxy's configuration (ACL patterns, a JSON answer): what llama-server's
# --alias values and model file names look like, without blanks, quotes, backslashes, "#" or "%".
MODEL_NAME = re.compile(r"[A-Za-z0-9/][A-Za-z0-9._:/@+=-]{0,199}")
MODEL_NAME_FORM = "letters, digits and . _ : / @ + = - (a letter, digit or / first, at most 200 characters)"
# A host name the proxy resolves at start (RFC 1123 labels).
_HOST_NAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}"
                        r"[A-Za-z0-9])?)*")
# HAProxy proxy and server names: letters, digits and _ . : - only.
_PROXY_NAME_CHAR = re.compile(r"[^A-Za-z0-9_.:-]")
# The report's states of an instance whose engine runs and answered /props: "deployed" (it runs its plan) and
# "previewed" (the judge found it will change: it serves its previous plan until the rollout drains it). A failed one
# stays out of rotation, even when its rollback restored the previous unit: the next run that deploys it puts it back.
_SERVING_STATES = ("deployed", "previewed")


# A server as a dict (as_dict, from_dict): the module's ``servers`` option and the routes file. The key travels
# apart from it, by ``host:instance`` (server_label), so that the option holding keys is the only one not logged.
SERVER_FIELDS = ("host", "instance", "address", "port", "slots", "model")


class ServerError(ValueError):
    """Why a server cannot be routed to. ``left_out``: it is not wrong, only unreachable by a gateway on another host
    or not answering yet (a note in a fleet's routes, not an error)."""

    def __init__(self, message: str, left_out: bool = False):
        super().__init__(message)
        self.left_out = left_out


class IncompleteServer(ServerError):
    """A server dict without some of its fields: the message names them, the caller says which entry."""


@dataclass(frozen=True)
class Server:
    """One running instance, as the gateway sends requests to it."""

    host: str  # the inventory host
    instance: str
    address: str  # where the gateway connects
    port: int
    slots: int  # requests it takes at once; the rest wait in the gateway's queue
    model: str  # the name its engine lists in /v1/models
    key: str = field(default="", repr=False)  # its API key ("" when it has none)

    @property
    def name(self) -> str:
        return server_name(self.host, self.instance)

    @property
    def label(self) -> str:
        return server_label(self.host, self.instance)

    def as_dict(self) -> dict:
        """Its fields without its key (SERVER_FIELDS)."""
        return {name: getattr(self, name) for name in SERVER_FIELDS}

    @classmethod
    def from_dict(cls, entry: Mapping, key: str = "") -> Server:
        """The server of a dict as as_dict gives it, with its key, checked as a report row's is (server_from_row),
        its address read as the row's listen address: blanks and an IPv6 address's brackets off, a loopback one
        left out. Raises ServerError."""
        missing = [name for name in SERVER_FIELDS if entry.get(name) in (None, "")]
        if missing:
            raise IncompleteServer(f"{', '.join(missing)} missing")
        host, listen = str(entry["host"]), str(entry["address"] or "")
        where = f"{host}/{entry['instance']}"
        if loopback_only(listen):
            raise ServerError(_loopback_note(where, listen), left_out=True)
        return _checked_server(where, host=host, instance=str(entry["instance"]),
                               address=server_address(listen, str(entry["address"])), port=entry["port"],
                               slots=entry["slots"], model=str(entry["model"] or ""), key=key)


@dataclass(frozen=True)
class Model:
    name: str
    backend: str  # the proxy's backend name
    servers: tuple[Server, ...]
    key: str = field(default="", repr=False)


@dataclass
class Routes:
    models: list[Model] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def model(self, name: str) -> Model | None:
        return next((model for model in self.models if model.name == name), None)


def server_label(host: str, instance: str) -> str:
    """How a server is named to people and in the keys' dicts: ``host:instance``."""
    return f"{host}:{instance}"


def server_name(host: str, instance: str) -> str:
    """The server's name in HAProxy's configuration and runtime API."""
    return proxy_name(server_label(host, instance))


def proxy_name(text: str) -> str:
    """A name HAProxy accepts for a backend or server: the text itself when it only holds allowed characters, else
    its allowed form with a short digest of the original (two different texts never share a name)."""
    cleaned = _PROXY_NAME_CHAR.sub("_", text)
    if cleaned == text and len(text) <= 100:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned[:90]}-{digest}"


def address_problem(address: str) -> str:
    """Why the proxy could not connect to this address ("" when it can)."""
    try:
        ipaddress.ip_address(address)
        return ""
    except ValueError:
        pass
    return "" if _HOST_NAME.fullmatch(address) else "it is neither an IP address nor a host name"


def server_address(listen_host: str, host_address: str) -> str:
    """Where the gateway reaches an engine: its own listen address when it names one address, else (all addresses,
    0.0.0.0 or ::) the host's address in the inventory."""
    addresses = listen_addresses(listen_host)
    first = addresses[0].strip("[]")
    try:
        unspecified = ipaddress.ip_address(first).is_unspecified
    except ValueError:
        unspecified = False
    return host_address if unspecified or len(addresses) > 1 else first


def _int(value) -> int:
    if isinstance(value, bool):
        return 0
    try:
        return int(str(value).strip())
    except ValueError:
        return 0


def _loopback_note(where: str, listen: str) -> str:
    return f"{where} is left out: it listens on {listen} only, which no gateway on another host reaches"


def _checked_server(where: str, *, host: str, instance: str, address: str, port, slots, model: str,
                    key: str) -> Server:
    """The server of these fields, or ServerError naming ``where`` (host/instance) and never the key."""
    problem = address_problem(address)
    if problem:
        raise ServerError(f"{where}: the address {address!r} cannot be a proxy server's: {problem}")
    port_number = _int(port)
    if not 0 < port_number < 65536:
        raise ServerError(f"{where}: its port {port!r} is not a TCP port")
    slot_count = _int(slots)
    if slot_count < 1:
        raise ServerError(f"{where} is left out: its engine does not answer /props (not started yet, or loading)",
                          left_out=True)
    if not MODEL_NAME.fullmatch(model):
        raise ServerError(f"{where}: its engine lists the model as {model!r}, which the gateway cannot route by; "
                          f"give the instance a name with --alias in {MODEL_NAME_FORM}")
    if key and api_key_problem(key):
        raise ServerError(f"{where}: its API key cannot be sent by the gateway: {api_key_problem(key)}")
    return Server(host=host, instance=instance, address=address, port=port_number, slots=slot_count, model=model,
                  key=key)


def router_server_name(instance: str, model: str) -> str:
    """A router instance's model as the gateway names it, in place of an instance: ``<instance>/<model>`` (an
    instance name holds no "/", so it names no instance of one model)."""
    return f"{instance}/{model}"


def served_rows(row: Mapping) -> list[Mapping]:
    """What a report row serves, each as a row of one model: the row itself, or for a router instance one row per
    model it routes (``router_models``: its name, slots, and whether it can serve). A model whose child failed is
    left out, and so is an unloaded one of a router that does not load on demand; each as a row that says why."""
    models = row.get("router_models")
    if models is None:
        return [row]
    rows = []
    for model in models:
        name = str(model.get("name") or "")
        served = {**row, "instance": router_server_name(str(row.get("instance")), name), "model_name": name,
                  "slots": model.get("slots"), "metrics": bool(row.get("metrics") and model.get("metrics")),
                  "router_model": name, "router_instance": row.get("instance")}
        if model.get("failed"):
            served["left_out"] = "its child exited in error (the router's /v1/models says failed)"
        elif not row.get("router_autoload", True) and model.get("status") not in ("loaded", "sleeping"):
            served["left_out"] = "it is not loaded, and its router loads no model on demand"
        rows.append(served)
    return rows


def server_from_row(host: str, host_address: str, row: Mapping, key: str = "") -> tuple[Server | None, str]:
    """The server a report row gives the gateway, or why it gives none (a note, or an error prefixed "error: ")."""
    where = f"{host}/{row.get('instance', '?')}"
    state = str(row.get("state") or "")
    if state == "absent":
        return None, ""  # removed on purpose: nothing to say
    if state not in _SERVING_STATES:
        return None, f"{where} is left out: its state is {state or 'unknown'}"
    listen = str(row.get("host") or "")
    if loopback_only(listen):
        return None, _loopback_note(where, listen)
    if row.get("left_out"):
        return None, f"{where} is left out: {row['left_out']}"
    try:
        return _checked_server(where, host=host, instance=str(row.get("instance")),
                               address=server_address(listen, host_address), port=row.get("port"),
                               slots=row.get("slots"), model=str(row.get("model_name") or ""), key=key), ""
    except ServerError as err:
        return None, str(err) if err.left_out else f"error: {err}"


def servers_from_dicts(entries: Iterable[Mapping], keys: Mapping) -> tuple[list[Server], list[str]]:
    """The servers of dicts as Server.as_dict gives them, each with its key from ``keys`` (by ``host:instance``),
    and why any cannot be routed (every such entry is an error: nothing here is left out quietly)."""
    servers, errors = [], []
    for index, entry in enumerate(entries):
        key = str(keys.get(server_label(entry.get("host"), entry.get("instance"))) or "")
        try:
            servers.append(Server.from_dict(entry, key))
        except IncompleteServer as err:
            errors.append(f"servers[{index}]: {err}")
        except ServerError as err:
            errors.append(str(err))
    return servers, errors


def routes(servers: Iterable[Server], notes: Iterable[str] = ()) -> Routes:
    """The servers grouped by model, in a stable order (model name, then host and instance)."""
    result = Routes(notes=list(notes))
    by_model: dict[str, list[Server]] = {}
    for server in servers:
        by_model.setdefault(server.model, []).append(server)
    for name in sorted(by_model):
        members = sorted(by_model[name], key=lambda server: (server.host, server.instance))
        keys = {server.key for server in members}
        if len(keys) > 1:
            hosts = ", ".join(f"{server.host}/{server.instance}" for server in members)
            result.errors.append(f"the replicas of model {name!r} ({hosts}) have different API keys: the gateway "
                                 "sends one key per model; give them the same key")
            continue
        names = [server.name for server in members]
        if len(set(names)) != len(names):
            result.errors.append(f"model {name!r} lists the same instance twice: {', '.join(names)}")
            continue
        result.models.append(Model(name=name, backend=proxy_name(f"model_{name}"), servers=tuple(members),
                                   key=keys.pop()))
    return result


def fleet_servers(hosts: Iterable[Mapping]) -> dict:
    """What the gateway routes, from the fleet's hosts as the controller sees them: each host's ``name``, ``address``
    (where the gateway reaches it), ``report`` (its rows from this run's judge or rollout; None when it has none)
    and ``keys`` (each instance's API key).

    Returns ``servers`` (plain dicts, without keys), ``server_keys`` (by ``host:instance``), ``verified`` (the
    servers whose instance runs its plan, verified in this run: they belong in rotation, even one a failed rollout
    left drained), ``notes`` (instances and hosts left out) and ``errors``. A host without a report in this run
    (unreachable, failed before its judge) is left out: nothing says what it runs.
    """
    servers, keys, verified, notes, errors = [], {}, [], [], []
    for host in hosts:
        name, report = str(host.get("name")), host.get("report")
        if report is None:
            notes.append(f"{name} is left out: it has no report in this run (unreachable, or failed before its "
                         "judge)")
            continue
        for row in [served for entry in report for served in served_rows(entry)]:
            key = str((host.get("keys") or {}).get(row.get("router_instance") or row.get("instance")) or "")
            server, why = server_from_row(name, str(host.get("address") or name), row, key)
            if why:
                (errors if why.startswith("error: ") else notes).append(why.removeprefix("error: "))
            if server is not None:
                servers.append(server.as_dict())
                if server.key:
                    keys[server.label] = server.key
                if row.get("state") == "deployed":
                    verified.append({"host": server.host, "instance": server.instance})
    return {"servers": servers, "server_keys": keys, "verified": verified, "notes": notes, "errors": errors}
