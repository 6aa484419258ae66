"""The gateway's HAProxy configuration (haproxy_config.py): what it routes, refuses and hides.

`haproxy -c` reads every configuration these tests render in tests/integration/test_gateway_real.py."""

import json
import re

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes, haproxy_config
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import gateway_settings

CLIENT_KEY = "client-key-0001"
ENGINE_KEY = "engine-key-0002"


def _settings(**raw):
    settings, errors = gateway_settings({"api_keys": [CLIENT_KEY], **raw})
    assert errors == []
    return settings


def _routes(*models, key=ENGINE_KEY):
    servers = [fleet_routes.Server(host=f"h{i}", instance="main", address=f"10.0.0.{i}", port=8080, slots=slots,
                                   model=model, key=key)
               for i, (model, slots) in enumerate(models, start=1)]
    return fleet_routes.routes(servers)


def _section(text, title):
    body = text.split(f"\n{title}\n", 1)[1]
    return body.split("\n\n", 1)[0]


def test_quoted_answers_are_json():
    text = haproxy_config.render(_settings(metrics_port=8405), _routes(("gemma", 2), ("qwen", 1)))
    answers = re.findall(r" string '([^']*)'", text)
    assert len(answers) > 15
    for answer in answers:
        json.loads(answer)


def test_keys():
    text = haproxy_config.render(_settings(), _routes(("gemma", 2)))
    assert CLIENT_KEY not in text  # clients' keys only as digests
    assert haproxy_config.key_digest(f"Bearer {CLIENT_KEY}") in text
    assert f"http-request set-header Authorization 'Bearer {ENGINE_KEY}'" in _section(text, "backend model_gemma")


def test_open_gateway_and_open_engines():
    text = haproxy_config.render(_settings(allow_open=True), _routes(("gemma", 2), key=""))
    assert "llf_key" not in text
    assert "status 401" not in text
    assert "http-request del-header Authorization" in text  # no client header reaches an open engine


def test_backend_slots_and_health():
    text = haproxy_config.render(_settings(queue_timeout_s=45), _routes(("gemma", 4), ("gemma", 2)))
    backend = _section(text, "backend model_gemma")
    assert "server h1:main 10.0.0.1:8080 maxconn 4" in backend
    assert "server h2:main 10.0.0.2:8080 maxconn 2" in backend
    assert "option httpchk GET /health" in backend
    assert "http-check expect status 200" in backend
    assert "balance leastconn" in backend
    assert "http-request lua.llamafleet_wait 45000 unless { stopping }" in backend
    assert "timeout queue 45s" in text


@pytest.mark.parametrize(
    ("raw", "models", "line"),
    [
        ({}, [("gemma", 1), ("alpha", 1)], "str(alpha) unless"),  # first by name
        ({"default_model": "gemma"}, [("gemma", 1), ("alpha", 1)], "str(gemma) unless"),
        ({"default_model": "absent"}, [("gemma", 1)], "str(absent) unless"),  # then 404 by the served check
    ],
)
def test_default_model(raw, models, line):
    text = haproxy_config.render(_settings(**raw), _routes(*models))
    assert f"http-request set-var(txn.llf_model) {line}" in text


def test_no_model_served():
    text = haproxy_config.render(_settings(), _routes())
    assert "the fleet serves no model yet" in text
    assert "use_backend" not in text
    assert "\nbackend " not in text
    assert '{"object":"list","data":[]}' in text


def test_models_answer():
    answer = json.loads(haproxy_config.models_answer(_routes(("gemma", 4), ("gemma", 2), ("qwen", 1))))
    assert answer == {"object": "list", "data": [
        {"id": "gemma", "object": "model", "owned_by": "llamafleet", "meta": {"replicas": 2, "slots": 6}},
        {"id": "qwen", "object": "model", "owned_by": "llamafleet", "meta": {"replicas": 1, "slots": 1}}]}


@pytest.mark.parametrize(
    ("raw", "bind"),
    [({}, "bind 0.0.0.0:8000"), ({"listen_address": "::", "port": 9000}, "bind [::]:9000"),
     ({"tls_certificate": "/etc/ssl/gw.pem"}, "bind 0.0.0.0:8000 ssl crt /etc/ssl/gw.pem alpn h2,http/1.1")],
)
def test_bind(raw, bind):
    assert f"    {bind}\n" in haproxy_config.render(_settings(**raw), _routes(("gemma", 1)))


def test_limits():
    settings = _settings(max_body_bytes=65536, max_header_bytes=8192, request_timeout_s=7)
    text = haproxy_config.render(settings, _routes(("gemma", 1)))
    assert haproxy_config.buffer_size(settings) == 65536 + 8192 + 1024
    assert f"tune.bufsize {65536 + 8192 + 1024}" in text
    assert "timeout http-request 7s" in text
    assert "{ req.hdr_val(content-length) gt 65536 }" in text
    assert "{ req.body_size gt 65536 }" in text
    assert "{ req.hdrs,length gt 8192 }" in text


def test_one_thread_keeps_each_servers_slot_count_strict():
    text = haproxy_config.render(_settings(), _routes(("gemma", 1)))
    global_section = text.split("\n\n", maxsplit=1)[0]
    assert global_section.startswith("global\n")
    assert "\n    nbthread 1\n" in global_section


def test_metrics_frontend():
    assert "prometheus-exporter" not in haproxy_config.render(_settings(), _routes(("gemma", 1)))
    text = haproxy_config.render(_settings(metrics_port=8405), _routes(("gemma", 1)))
    metrics = _section(text, "frontend llamafleet_metrics")
    assert "bind 0.0.0.0:8405" in metrics
    assert "unless llf_metrics_key" in metrics


def test_process_settings():
    text = haproxy_config.render(_settings(run_user="", chroot=""), _routes(("gemma", 1)))
    assert "chroot" not in text
    assert "\n    user " not in text
    text = haproxy_config.render(_settings(), _routes(("gemma", 1)))
    assert "    chroot /var/lib/haproxy\n    user haproxy\n    group haproxy" in text
    assert "stats socket /run/haproxy/admin.sock mode 600 level admin expose-fd listeners" in text


def test_endpoints_allowed():
    text = haproxy_config.render(_settings(), _routes(("gemma", 1)))
    post = re.search(r"acl llf_post path (.*)", text).group(1).split()
    assert "/v1/chat/completions" in post
    assert "/slots" not in post
    assert "/lora-adapters" not in post
    assert "unless METH_POST llf_post or METH_GET llf_get" in text


def test_quoting_refuses_a_quote():
    with pytest.raises(ValueError, match="cannot single-quote"):
        haproxy_config._quoted("it's")
