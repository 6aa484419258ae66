# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's settings: role ``llama_gateway``'s table (in the machinery of ``_layout/settings.py``) and check.

Pure. The role passes its variables ``llama_gateway_<name>``; the module that writes the configuration takes them as
one ``settings`` option whose argument spec comes from here (the clients' keys, a secret, as an option of their own).
The role's defaults, argument specs and variable mapping and the ``gateway_settings`` doc fragment are written from
this table by ``scripts/generate_settings.py``. Every value is checked before anything is rendered: an error names
the variable, the value (never a key) and the accepted form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, make_dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.settings_check import typed_value
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import (
    Setting,
    settings_spec,
    settings_table,
)

ROLE_PREFIX = "llama_gateway_"
KIB = 1024
MIB = 1024 * KIB

GATEWAY_SETTINGS: tuple[Setting, ...] = settings_table(
    ROLE_PREFIX,
    Setting("listen_address", "str", "0.0.0.0", form="address",
            doc="Address the gateway listens on (an IP address; V(0.0.0.0) or V(::) for every address)."),
    Setting("port", "int", 8000, bounds=(1, 65535),
            doc="Port of the OpenAI-compatible endpoint. From 1 to 65535."),
    # Clients' keys (Authorization: Bearer KEY); the configuration keeps only their SHA-256.
    Setting("api_keys", "list", (), elements="str", form="keys", secret=True,
            doc="Clients' API keys (sent as C(Bearer KEY) in C(Authorization)); a request without one of "
                "them gets 401 before any engine sees it. The configuration keeps only their SHA-256. Keep "
                "them in a vault."),
    Setting("allow_open", "bool", False,
            doc="Serve without client keys (an empty key list fails otherwise)."),
    Setting("default_model", "str", "", form="model or empty",
            doc="Model of a request that names none (no C(model) in its body, no C(?model=) on a GET); empty "
                "for the first served model by name."),
    Setting("tls_certificate", "str", "", form="path or empty",
            doc="PEM file on the gateway host (certificate, chain and private key) to serve HTTPS with; empty "
                "for plain HTTP."),
    Setting("max_body_bytes", "int", 1 * MIB, bounds=(4 * KIB, 64 * MIB),
            doc="Largest request body (413 beyond). The whole body is read before routing, so this also sizes "
                "HAProxy's buffers. From 4096 to 67108864."),
    Setting("max_header_bytes", "int", 32 * KIB, bounds=(1 * KIB, 256 * KIB),
            doc="Largest request header block (431 beyond). From 1024 to 262144."),
    Setting("request_timeout_s", "int", 30, bounds=(1, 3600),
            doc="Time a client has to send its headers and body (408 beyond). From 1 to 3600."),
    Setting("queue_timeout_s", "int", 60, bounds=(1, 3600),
            doc="Longest wait of a request for a free slot, or for a replica back in rotation (503 beyond). "
                "From 1 to 3600."),
    Setting("connect_timeout_s", "int", 5, bounds=(1, 300),
            doc="Time to connect to an engine. From 1 to 300."),
    Setting("response_timeout_s", "int", 600, bounds=(1, 86400),
            doc="Longest silence of an engine while it answers (504 beyond); a stream resets it at each "
                "token. From 1 to 86400."),
    Setting("client_timeout_s", "int", 600, bounds=(1, 86400),
            doc="Longest silence of a client. From 1 to 86400."),
    Setting("health_interval_s", "int", 2, bounds=(1, 300),
            doc="Seconds between two C(/health) checks of each engine. From 1 to 300."),
    Setting("maxconn", "int", 4096, bounds=(1, 1_000_000),
            doc="Connections the gateway takes at once. From 1 to 1000000."),
    Setting("drain_timeout_s", "int", 300, bounds=(0, 86400),
            doc="How long a rollout waits for a drained instance's requests in flight before it restarts it "
                "anyway (and says so). From 0 to 86400."),
    Setting("metrics_port", "int", 0, bounds=(0, 65535),
            doc="Port of HAProxy's Prometheus exporter (C(/metrics), with the same keys as the endpoint); 0 "
                "for none. From 0 to 65535."),
    Setting("config_path", "str", "/etc/haproxy/haproxy.cfg", form="path",
            doc="HAProxy's configuration file (written root-only, 0600; a file that was not ours is kept once "
                "as C(<path>.before-llamafleet))."),
    Setting("lua_path", "str", "/etc/haproxy/llamafleet.lua", form="path",
            doc="Where the gateway's Lua actions are installed."),
    Setting("admin_socket", "str", "/run/haproxy/admin.sock", form="path",
            doc="HAProxy's runtime API socket (root only)."),
    Setting("master_socket", "str", "/run/haproxy-master.sock", form="path",
            doc="HAProxy's master CLI socket (Debian's unit starts HAProxy with C(-S /run/haproxy-master.sock)): a "
                "drain counts the requests of the processes a reload left finishing through it."),
    Setting("state_file", "str", "/var/lib/haproxy/llamafleet-server-state", form="path",
            doc="Where the servers' states are saved before a reload (a drained instance stays drained)."),
    Setting("run_user", "str", "haproxy", form="account or empty",
            doc="Account (user and group) HAProxy's worker runs as; empty to keep root."),
    Setting("chroot", "str", "/var/lib/haproxy", form="path or empty",
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


def module_settings_spec() -> dict:
    """The module's ``settings`` option: every setting but the clients' keys, which have an option of their own
    (not logged)."""
    return settings_spec(GATEWAY_SETTINGS)


def gateway_settings(raw: Mapping) -> tuple[GatewaySettings, list[str]]:
    """The settings from a mapping of names to values (missing ones take their defaults), and the errors."""
    values: dict = {}
    errors = [f"{ROLE_PREFIX}{name}: not a gateway setting (known: {', '.join(sorted(BY_NAME))})"
              for name in sorted(set(raw) - set(BY_NAME))]
    for setting in GATEWAY_SETTINGS:
        value = raw.get(setting.name, setting.default)
        if value is None:
            value = setting.default
        typed, expected = typed_value(setting, value)
        if expected:
            shown = "(the value is a secret, not shown)" if setting.secret else repr(value)
            errors.append(f"{setting.role_variable}={shown} is not valid: expected {expected}")
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
