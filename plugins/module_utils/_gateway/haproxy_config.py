# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's HAProxy configuration, rendered from its settings and the fleet's routes.

Pure. Every value that reaches the file has a checked form (settings.py, fleet_routes.py): addresses, ports,
paths, model names and keys hold no blank, quote, backslash, "#", "$" or "%", so each one is one HAProxy word
as it stands; texts the file holds beyond those (the JSON answers) are single-quoted, which HAProxy reads
literally, and hold no single quote. Clients' keys appear only as their SHA-256; the engines' keys are in the
Authorization header each backend sets, which is why the file is written root-only (0600).

What a request meets, in order (docs/gateway.md says it for users):
1. the gateway's own /health (no key: a load balancer's probe);
2. the key (401), the header and body limits (431, 413), the endpoint allow-list (404);
3. GET /v1/models, answered by the gateway from the routes;
4. the body, parsed as JSON by the Lua action (400 when it is not an object or its model is not a string);
5. the model: the body's, or ?model= on a GET, or the default (404 when the fleet does not serve it);
6. the model's backend: at most its slot count of requests per replica, the rest in the backend's queue for at
   most queue_timeout_s (503), and, while no replica is up (a single replica restarting), a wait of the same
   bound in the Lua action.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import Routes
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import GatewaySettings

FRONTEND = "llamafleet"
METRICS_FRONTEND = "llamafleet_metrics"
# What the engines answer that the gateway forwards: inference and the engine's own read-only views. /slots
# (save, restore, erase), /lora-adapters (POST changes the engine for every client) and /metrics (scraped from
# each engine directly) stay behind it.
POST_PATHS = ("/completion", "/completions", "/v1/completions", "/chat/completions", "/v1/chat/completions",
              "/v1/responses", "/v1/messages", "/v1/messages/count_tokens", "/embedding", "/embeddings",
              "/v1/embeddings", "/rerank", "/reranking", "/v1/rerank", "/v1/reranking", "/tokenize", "/detokenize",
              "/apply-template", "/infill")
GET_PATHS = ("/props",)
MODELS_PATHS = ("/v1/models", "/models")
# The statuses whose answer HAProxy writes itself, as JSON in the engines' error shape.
_ERRORS = {
    400: ("invalid_request_error", "the request is not valid HTTP or its body could not be read"),
    408: ("timeout_error", "the request took too long to arrive"),
    413: ("invalid_request_error", "the request body is too large"),
    500: ("server_error", "the gateway failed"),
    502: ("server_error", "the engine answered with invalid HTTP"),
    503: ("unavailable_error", "no replica of the model could take the request in time"),
    504: ("timeout_error", "the engine did not answer in time"),
}


def _error_json(status: int, kind: str, message: str) -> str:
    return json.dumps({"error": {"code": status, "type": kind, "message": message}}, ensure_ascii=True)


def _quoted(text: str) -> str:
    """A literal HAProxy word: single quotes take everything up to the next one as it is."""
    if "'" in text or "\n" in text or "\r" in text:
        raise ValueError(f"cannot single-quote {text!r}")
    return f"'{text}'"


def _json_return(status: int, body: str, condition: str) -> str:
    return f"    http-request return status {status} content-type application/json string {_quoted(body)} {condition}"


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def models_answer(routes: Routes) -> str:
    """GET /v1/models: the fleet's models in the OpenAI list shape, with their replica and slot counts."""
    return json.dumps({"object": "list", "data": [
        {"id": model.name, "object": "model", "owned_by": "llamafleet",
         "meta": {"replicas": len(model.servers), "slots": sum(server.slots for server in model.servers)}}
        for model in routes.models]}, ensure_ascii=True, separators=(",", ":"))


def default_model(settings: GatewaySettings, routes: Routes) -> str:
    """The model of a request that names none: the setting, else the first served model by name ("" = none)."""
    if settings.default_model:
        return settings.default_model
    return routes.models[0].name if routes.models else ""


def buffer_size(settings: GatewaySettings) -> int:
    """tune.bufsize: a whole request (headers and body up to their limits) must fit, since the body is read
    before routing; HAProxy keeps 1 KiB of it for header rewrites (tune.maxrewrite)."""
    return settings.max_body_bytes + settings.max_header_bytes + 1024


def _bind(address: str, port: int, certificate: str) -> str:
    where = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    return f"    bind {where}" + (f" ssl crt {certificate} alpn h2,http/1.1" if certificate else "")


def _key_rules(settings: GatewaySettings, acl: str) -> list[str]:
    if settings.allow_open:
        return []
    digests = " ".join(sorted({key_digest(f"Bearer {key}") for key in settings.api_keys}))
    message = _error_json(401, "authentication_error", "a valid API key is required (Authorization: Bearer KEY)")
    return [f"    acl {acl} req.hdr(authorization),sha2(256),hex,lower -m str {digests}",
            _json_return(401, message, f"unless {acl}")]


def _global(settings: GatewaySettings) -> list[str]:
    lines = ["global",
             "    log /dev/log local0",
             f"    maxconn {settings.maxconn}",
             # One thread: a server's maxconn (its slot count) is strict only then. With two threads, 3 bursts in 60
             # sent a one-slot replica a second request (HAProxy 2.6, its issue #2744); one thread serves far more
             # requests per second than a fleet of engines can answer.
             "    nbthread 1",
             # The runtime API: root only; expose-fd lets a reload hand the listening sockets over, so no
             # connection is refused while the new process starts.
             f"    stats socket {settings.admin_socket} mode 600 level admin expose-fd listeners",
             "    stats timeout 30s",
             f"    server-state-file {settings.state_file}",
             f"    lua-load {settings.lua_path}",
             f"    tune.bufsize {buffer_size(settings)}"]
    if settings.chroot:
        lines.append(f"    chroot {settings.chroot}")
    if settings.run_user:
        lines += [f"    user {settings.run_user}", f"    group {settings.run_user}"]
    return lines


def _defaults(settings: GatewaySettings) -> list[str]:
    lines = ["defaults",
             "    mode http",
             "    log global",
             # The request line, status and timings; no header is captured, so no key reaches the log.
             "    option httplog",
             "    option dontlognull",
             f"    timeout connect {settings.connect_timeout_s}s",
             f"    timeout client {settings.client_timeout_s}s",
             f"    timeout server {settings.response_timeout_s}s",
             f"    timeout http-request {settings.request_timeout_s}s",
             "    timeout http-keep-alive 10s",
             f"    timeout queue {settings.queue_timeout_s}s",
             # Drained servers stay drained across a reload (the state is saved just before it).
             "    load-server-state-from-file global"]
    for status, (kind, message) in sorted(_ERRORS.items()):
        lines.append(f"    http-error status {status} content-type application/json string "
                     f"{_quoted(_error_json(status, kind, message))}")
    return lines


def _frontend(settings: GatewaySettings, routes: Routes) -> list[str]:
    limit = settings.max_body_bytes
    lines = [f"frontend {FRONTEND}",
             _bind(settings.listen_address, settings.port, settings.tls_certificate),
             # The whole body is read before the rules run: the model is in it.
             "    option http-buffer-request",
             "    option forwardfor",
             # After a reload, the old process tells each client to come back on a new connection (the new process).
             "    http-after-response set-header Connection close if { stopping }",
             _json_return(200, '{"status":"ok"}', "if METH_GET { path /health }")]
    lines += _key_rules(settings, "llf_key")
    too_big = _error_json(413, "invalid_request_error", f"the request body is over {limit} bytes")
    headers = _error_json(431, "invalid_request_error",
                          f"the request headers are over {settings.max_header_bytes} bytes")
    lines += [_json_return(431, headers, f"if {{ req.hdrs,length gt {settings.max_header_bytes} }}"),
              _json_return(413, too_big, f"if {{ req.hdr_val(content-length) gt {limit} }}"),
              _json_return(413, too_big, f"if {{ req.body_size gt {limit} }}"),
              f"    acl llf_models path {' '.join(MODELS_PATHS)}",
              f"    acl llf_post path {' '.join(POST_PATHS)}",
              f"    acl llf_get path {' '.join(GET_PATHS)}",
              _json_return(200, models_answer(routes), "if METH_GET llf_models"),
              _json_return(404, _error_json(404, "not_found_error", "this gateway has no such endpoint"),
                           "unless METH_POST llf_post or METH_GET llf_get"),
              "    http-request lua.llamafleet_body if METH_POST"]
    for state, why in (("empty", "the request has no body"), ("malformed", "the request body is not valid JSON"),
                       ("not-object", "the request body is not a JSON object"),
                       ("bad-model", 'the "model" of the request is not a string')):
        lines.append(_json_return(400, _error_json(400, "invalid_request_error", why),
                                  f"if {{ var(txn.llf_body) -m str {state} }}"))
    lines.append("    http-request set-var(txn.llf_model) url_param(model) if METH_GET { url_param(model) -m found }")
    fallback = default_model(settings, routes)
    if fallback:
        lines.append(f"    http-request set-var(txn.llf_model) str({fallback})"
                     " unless { var(txn.llf_model) -m found }")
    served = " ".join(model.name for model in routes.models)
    unknown = _error_json(404, "model_not_found", "the fleet serves no such model; GET /v1/models lists them")
    if served:
        lines.append(f"    acl llf_served var(txn.llf_model) -m str {served}")
        lines.append(_json_return(404, unknown, "unless llf_served"))
    else:
        lines.append(_json_return(503, _error_json(503, "unavailable_error", "the fleet serves no model yet"),
                                  ""))
    for model in routes.models:
        lines.append(f"    use_backend {model.backend} if {{ var(txn.llf_model) -m str {model.name} }}")
    return lines


def _backend(settings: GatewaySettings, model) -> list[str]:
    queue_ms = settings.queue_timeout_s * 1000
    none_ready = _error_json(503, "unavailable_error",
                             f"no replica of {model.name} was ready within {settings.queue_timeout_s} s")
    lines = [f"backend {model.backend}",
             # The replica with the fewest requests; when every one holds its slot count, the request waits in this
             # backend's queue and goes to the first replica that frees a slot.
             "    balance leastconn",
             "    option httpchk GET /health",
             "    http-check expect status 200",
             "    retries 3",
             "    retry-on conn-failure",
             "    option redispatch 1",
             # A process that is stopping (the old one, after a reload) finishes the requests it still gets on its
             # kept-alive connections: its backends count no usable server then, and need not.
             f"    http-request lua.llamafleet_wait {queue_ms} unless {{ stopping }}",
             _json_return(503, none_ready, "if { nbsrv() eq 0 } !{ stopping }")]
    if model.key:
        lines.append(f"    http-request set-header Authorization {_quoted('Bearer ' + model.key)}")
    else:
        lines.append("    http-request del-header Authorization")
    # A host name the gateway cannot resolve at its start leaves that server out of rotation (none), rather than
    # stopping the whole gateway from starting. A refused connection takes a server out at once (observe layer4,
    # mark-down), before its next check: leastconn would otherwise keep choosing the idle, dead one.
    lines.append(f"    default-server check inter {settings.health_interval_s}s fastinter 500ms downinter 1s "
                 "rise 1 fall 2 observe layer4 error-limit 1 on-error mark-down init-addr last,libc,none")
    for server in model.servers:
        where = f"[{server.address}]:{server.port}" if ":" in server.address else f"{server.address}:{server.port}"
        lines.append(f"    server {server.name} {where} maxconn {server.slots}")
    return lines


def _metrics(settings: GatewaySettings) -> list[str]:
    if not settings.metrics_port:
        return []
    lines = [f"frontend {METRICS_FRONTEND}",
             _bind(settings.listen_address, settings.metrics_port, settings.tls_certificate)]
    lines += _key_rules(settings, "llf_metrics_key")
    lines += ["    http-request use-service prometheus-exporter if { path /metrics }",
              _json_return(404, _error_json(404, "not_found_error", "only /metrics is served here"), "")]
    return lines


def render(settings: GatewaySettings, routes: Routes, header: Iterable[str] = ()) -> str:
    """The configuration file's text."""
    sections = [[f"# {line}" for line in header], _global(settings), _defaults(settings),
                _frontend(settings, routes)]
    sections += [_backend(settings, model) for model in routes.models]
    sections.append(_metrics(settings))
    return "\n\n".join("\n".join(line.rstrip() for line in section) for section in sections if section) + "\n"


def gateway_urls(settings: Mapping, host: str) -> dict:
    """Where clients reach the gateway (``url``) and a Prometheus its exporter (``metrics_url``, "" without one),
    from its settings (``listen_address``, ``port``, ``metrics_port``, ``tls_certificate``) and ``host``, the gateway
    host's address: it is the address when the gateway listens on every one (0.0.0.0 or ::), else the one it listens
    on. An IPv6 address is bracketed."""
    listen = str(settings["listen_address"])
    address = str(host) if listen in ("0.0.0.0", "::") else listen
    if ":" in address:
        address = f"[{address}]"
    scheme = "https" if settings.get("tls_certificate") else "http"
    metrics_port = int(settings.get("metrics_port") or 0)
    return {"url": f"{scheme}://{address}:{int(settings['port'])}",
            "metrics_url": f"{scheme}://{address}:{metrics_port}/metrics" if metrics_port else ""}
