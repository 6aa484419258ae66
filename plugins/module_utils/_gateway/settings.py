# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's settings: one table of names, types, defaults and accepted forms, and their check.

Pure. The role ``llama_gateway`` passes its variables ``llama_gateway_<name>``; the module that writes the
configuration takes them as one ``settings`` option whose argument spec comes from here, so the role, the module
used alone and the docs cannot disagree. Every value is checked before anything is rendered: an error names the
variable, the value (never a key) and the accepted form.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, make_dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import (
    MODEL_NAME,
    MODEL_NAME_FORM,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.grammar import (
    ACCOUNT,
    ACCOUNT_FORM,
    PATH_FORM,
    path_problem,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.secrets import API_KEY_FORM, api_key_problem

ROLE_PREFIX = "llama_gateway_"
KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class GatewaySetting:
    name: str
    type: str  # "str", "int", "bool", "list"
    default: object
    bounds: tuple[int, int] | None = None
    form: str = ""  # "address", "path", "path or empty", "model or empty", "account or empty", "keys"
    secret: bool = False
    doc: str = ""  # the role's argument specs and the module's doc fragment say this (a unit test holds them to it)

    @property
    def role_variable(self) -> str:
        return ROLE_PREFIX + self.name

    def spec(self) -> dict:
        entry: dict = {"type": self.type, "default": list(self.default) if isinstance(self.default, tuple)
                       else self.default}
        if self.type == "list":
            entry["elements"] = "str"
        if self.secret:
            entry["no_log"] = True
        return entry


GATEWAY_SETTINGS: tuple[GatewaySetting, ...] = (
    GatewaySetting("listen_address", "str", "0.0.0.0", form="address",
                   doc="Address the gateway listens on (an IP address; V(0.0.0.0) or V(::) for every address)."),
    GatewaySetting("port", "int", 8000, bounds=(1, 65535),
                   doc="Port of the OpenAI-compatible endpoint. From 1 to 65535."),
    # Clients' keys (Authorization: Bearer KEY); the configuration keeps only their SHA-256.
    GatewaySetting("api_keys", "list", (), form="keys", secret=True,
                   doc="Clients' API keys (sent as C(Bearer KEY) in C(Authorization)); a request without one of "
                       "them gets 401 before any engine sees it. The configuration keeps only their SHA-256. Keep "
                       "them in a vault."),
    GatewaySetting("allow_open", "bool", False,
                   doc="Serve without client keys (an empty key list fails otherwise)."),
    GatewaySetting("default_model", "str", "", form="model or empty",
                   doc="Model of a request that names none (no C(model) in its body, no C(?model=) on a GET); empty "
                       "for the first served model by name."),
    GatewaySetting("tls_certificate", "str", "", form="path or empty",
                   doc="PEM file on the gateway host (certificate, chain and private key) to serve HTTPS with; empty "
                       "for plain HTTP."),
    GatewaySetting("max_body_bytes", "int", 1 * MIB, bounds=(4 * KIB, 64 * MIB),
                   doc="Largest request body (413 beyond). The whole body is read before routing, so this also sizes "
                       "HAProxy's buffers. From 4096 to 67108864."),
    GatewaySetting("max_header_bytes", "int", 32 * KIB, bounds=(1 * KIB, 256 * KIB),
                   doc="Largest request header block (431 beyond). From 1024 to 262144."),
    GatewaySetting("request_timeout_s", "int", 30, bounds=(1, 3600),
                   doc="Time a client has to send its headers and body (408 beyond). From 1 to 3600."),
    GatewaySetting("queue_timeout_s", "int", 60, bounds=(1, 3600),
                   doc="Longest wait of a request for a free slot, or for a replica back in rotation (503 beyond). "
                       "From 1 to 3600."),
    GatewaySetting("connect_timeout_s", "int", 5, bounds=(1, 300),
                   doc="Time to connect to an engine. From 1 to 300."),
    GatewaySetting("response_timeout_s", "int", 600, bounds=(1, 86400),
                   doc="Longest silence of an engine while it answers (504 beyond); a stream resets it at each "
                       "token. From 1 to 86400."),
    GatewaySetting("client_timeout_s", "int", 600, bounds=(1, 86400),
                   doc="Longest silence of a client. From 1 to 86400."),
    GatewaySetting("health_interval_s", "int", 2, bounds=(1, 300),
                   doc="Seconds between two C(/health) checks of each engine. From 1 to 300."),
    GatewaySetting("maxconn", "int", 4096, bounds=(1, 1_000_000),
                   doc="Connections the gateway takes at once. From 1 to 1000000."),
    GatewaySetting("drain_timeout_s", "int", 300, bounds=(0, 86400),
                   doc="How long a rollout waits for a drained instance's requests in flight before it restarts it "
                       "anyway (and says so). From 0 to 86400."),
    GatewaySetting("metrics_port", "int", 0, bounds=(0, 65535),
                   doc="Port of HAProxy's Prometheus exporter (C(/metrics), with the same keys as the endpoint); 0 "
                       "for none. From 0 to 65535."),
    GatewaySetting("config_path", "str", "/etc/haproxy/haproxy.cfg", form="path",
                   doc="HAProxy's configuration file (written root-only, 0600; a file that was not ours is kept once "
                       "as C(<path>.before-llamafleet))."),
    GatewaySetting("lua_path", "str", "/etc/haproxy/llamafleet.lua", form="path",
                   doc="Where the gateway's Lua actions are installed."),
    GatewaySetting("admin_socket", "str", "/run/haproxy/admin.sock", form="path",
                   doc="HAProxy's runtime API socket (root only)."),
    GatewaySetting("state_file", "str", "/var/lib/haproxy/llamafleet-server-state", form="path",
                   doc="Where the servers' states are saved before a reload (a drained instance stays drained)."),
    GatewaySetting("run_user", "str", "haproxy", form="account or empty",
                   doc="Account (user and group) HAProxy's worker runs as; empty to keep root."),
    GatewaySetting("chroot", "str", "/var/lib/haproxy", form="path or empty",
                   doc="Directory HAProxy's worker is chrooted to; empty for none."),
)
BY_NAME = {setting.name: setting for setting in GATEWAY_SETTINGS}


_PYTHON_TYPES = {"str": str, "int": int, "bool": bool, "list": tuple}
# The checked settings, one attribute per row of the table with its default (a secret one kept out of repr): built
# from the table, so a setting and its default are declared once.
GatewaySettings = make_dataclass(
    "GatewaySettings",
    [(setting.name, _PYTHON_TYPES[setting.type], field(default=setting.default, repr=not setting.secret))
     for setting in GATEWAY_SETTINGS],
    frozen=True)


def argument_spec() -> dict:
    return {setting.name: setting.spec() for setting in GATEWAY_SETTINGS}


def module_settings_spec() -> dict:
    """The module's ``settings`` option: every setting but the clients' keys, which have an option of their own
    (not logged)."""
    options = {name: spec for name, spec in argument_spec().items() if name != "api_keys"}
    return {"type": "dict", "default": {}, "options": options}


def _address_problem(value: str) -> str:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return "it is not an IP address"
    return ""


def _value_problem(setting: GatewaySetting, value) -> tuple[object, str]:
    """The value in its type, and why it is refused ("" when it is not)."""
    if setting.type == "bool":
        return (value, "") if isinstance(value, bool) else (value, "true or false")
    if setting.type == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return value, "a whole number"
        low, high = setting.bounds or (0, 2**31)
        return value, "" if low <= value <= high else f"a whole number from {low} to {high}"
    if setting.type == "list":
        if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
            return value, "a list of strings"
        problems = [api_key_problem(item) for item in value]
        problem = next((text for text in problems if text), "")
        return tuple(value), f"keys of {API_KEY_FORM}, at least 8 characters each ({problem})" if problem else ""
    if not isinstance(value, str):
        return value, "a string"
    if setting.form == "address":
        return value, "" if not _address_problem(value) else "an IP address (0.0.0.0 or :: for every address)"
    if setting.form.startswith("path") and (value or setting.form == "path"):
        return value, "" if not path_problem(value) else PATH_FORM
    if setting.form == "account or empty" and value:
        return value, "" if ACCOUNT.fullmatch(value) else ACCOUNT_FORM
    if setting.form == "model or empty" and value:
        return value, "" if MODEL_NAME.fullmatch(value) else MODEL_NAME_FORM
    return value, ""


def gateway_settings(raw: Mapping) -> tuple[GatewaySettings, list[str]]:
    """The settings from a mapping of names to values (missing ones take their defaults), and the errors."""
    values: dict = {}
    errors = [f"{ROLE_PREFIX}{name}: not a gateway setting (known: {', '.join(sorted(BY_NAME))})"
              for name in sorted(set(raw) - set(BY_NAME))]
    for setting in GATEWAY_SETTINGS:
        value = raw.get(setting.name, setting.default)
        if value is None:
            value = setting.default
        typed, accepted = _value_problem(setting, value)
        if accepted:
            shown = "(the value is a secret, not shown)" if setting.secret else repr(value)
            errors.append(f"{setting.role_variable}={shown} is not valid: expected {accepted}")
            continue
        values[setting.name] = typed
    if not errors:
        settings = GatewaySettings(**values)
        if not settings.api_keys and not settings.allow_open:
            errors.append(f"{ROLE_PREFIX}api_keys is empty: every request would reach the engines without a key; "
                          f"give clients' keys, or set {ROLE_PREFIX}allow_open: true for an open gateway")
        if settings.metrics_port and settings.metrics_port == settings.port:
            errors.append(f"{ROLE_PREFIX}metrics_port={settings.metrics_port} is the gateway's own port: "
                          "give the exporter another port, or 0 for none")
        return settings, errors
    return GatewaySettings(), errors
