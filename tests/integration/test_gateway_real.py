"""The gateway on real parts: Debian's HAProxy (with lua-cjson) in front of real llama-server engines.

Three engines serve two models: "alpha" twice (one slot each) and "beta" once. The configuration is rendered by
_gateway/haproxy_config.py from routes, started in master-worker mode as Debian's unit starts it, and driven by
_converge/gateway.py through HAProxy's runtime API. What a request meets is read from real answers; what the
backends saw is read from HAProxy's own counters (a request refused at the gateway never reaches one).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import gateway
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes, haproxy_config
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import gateway_settings

from .conftest import Server, free_port, run_playbook
from .haproxy_gateway import CLIENT_KEY, LUA, MAX_BODY, Gateway, haproxy_path, run_command

ENGINE_KEY = "engine-key-integration-2"


def _engine(start_server, engine_bin, model_path, alias, slots=1):
    port = free_port()
    argv = [engine_bin, "-m", model_path, "--host", "127.0.0.1", "--port", str(port), "-c", str(2048 * slots),
            "-np", str(slots), "--alias", alias, "-t", "1", "--api-key-file", str(_key_file())]
    return start_server(argv, {}), argv


def _key_file() -> Path:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"llamafleet-gateway-test-{os.getpid()}.key"
    if not path.exists():
        path.write_text(ENGINE_KEY + "\n")
        path.chmod(0o600)
    return path


def _server(host, engine, alias, slots=1):
    return fleet_routes.Server(host=host, instance="main", address="127.0.0.1", port=engine.port, slots=slots,
                               model=alias, key=ENGINE_KEY)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, engine_bin, model_path):
    directory = tmp_path_factory.mktemp("gateway")
    started = []

    def start(argv, env):
        server = Server(argv, env, directory / f"engine-{len(started)}.log")
        started.append(server)
        return server

    alpha1, _argv = _engine(start, engine_bin, model_path, "alpha")
    alpha2, _argv = _engine(start, engine_bin, model_path, "alpha")
    beta, beta_argv = _engine(start, engine_bin, model_path, "beta")
    for engine in started:
        engine.wait_healthy()
    servers = [_server("h1", alpha1, "alpha"), _server("h2", alpha2, "alpha"), _server("h3", beta, "beta")]
    proxy = Gateway(directory, {}, servers)
    _wait_all_up(proxy)
    yield {"gateway": proxy, "alpha": [alpha1, alpha2], "beta": beta, "beta_argv": beta_argv, "start": start,
           "servers": servers}
    proxy.stop()
    for engine in started:
        engine.stop()


def _wait_all_up(proxy, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(state.serving for state in proxy.stats().values()):
            return
        time.sleep(0.2)
    raise AssertionError(f"not every server came up: {proxy.stats()}")


def _call(url, body=None, *, key=CLIENT_KEY, method=None, headers=None, timeout=120):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def _raw(port, payload: bytes, pause_after=None, timeout=15):
    """Bytes on a socket, for what urllib will not send (a slow sender); the status line and body back."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload)
        if pause_after:
            time.sleep(pause_after)
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    head, _blank, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body or b"null")


SHORT = {"model": "alpha", "prompt": "The capital of France is", "n_predict": 4, "temperature": 0}


def test_rendered_configurations_pass_haproxys_parser(tmp_path):
    """Every shape of the file that the role can write: haproxy -c reads it (and refuses a broken one)."""
    certificate = tmp_path / "gateway.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=gateway", "-days", "2",
                    "-keyout", str(certificate), "-out", str(certificate)], check=True, capture_output=True)
    servers = [fleet_routes.Server(host=f"h{i}", instance="main", address=address, port=8080, slots=slots,
                                   model=model, key=key)
               for i, (address, slots, model, key) in enumerate([
                   ("10.0.0.1", 4, "gemma", ENGINE_KEY), ("fd00::2", 2, "gemma", ENGINE_KEY),
                   ("node3.example", 1, "/var/lib/llamafleet/models/qwen.gguf", ""),
                   ("10.0.0.4", 1, "a:b@c+d=e", "")])]
    cases = {
        "keys": ({"api_keys": [CLIENT_KEY, "second-client-key"]}, servers),
        "open": ({"allow_open": True}, servers),
        "tls and metrics": ({"api_keys": [CLIENT_KEY], "tls_certificate": str(certificate), "metrics_port": 8405,
                             "listen_address": "::"}, servers),
        "no model yet": ({"api_keys": [CLIENT_KEY]}, []),
        "default model": ({"api_keys": [CLIENT_KEY], "default_model": "gemma"}, servers),
        "Debian's process settings": ({"api_keys": [CLIENT_KEY]}, servers[:1]),
    }
    for name, (raw, members) in cases.items():
        settings, errors = gateway_settings({"lua_path": str(LUA), **raw})
        assert errors == [], name
        text = haproxy_config.render(settings, fleet_routes.routes(members))
        assert gateway.check_config(run_command, haproxy_path(), text, str(tmp_path)) == "", name
    broken = haproxy_config.render(settings, fleet_routes.routes(servers)).replace("balance leastconn", "balance x")
    assert "balance" in gateway.check_config(run_command, haproxy_path(), broken, str(tmp_path))


def test_routes_by_model_and_answers_the_model_list(fleet):
    proxy = fleet["gateway"]
    status, models = _call(proxy.url("/v1/models"), method="GET")
    assert status == 200
    assert [(m["id"], m["meta"]["replicas"]) for m in models["data"]] == [("alpha", 2), ("beta", 1)]
    for model in ("alpha", "beta"):
        status, answer = _call(proxy.url("/v1/chat/completions"), {
            "model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3})
        assert status == 200, answer
        assert answer["model"] == model  # the engine that answered serves it
    # No model: the default, the first model by name.
    status, answer = _call(proxy.url("/completion"), {"prompt": "Hi", "n_predict": 2})
    assert (status, answer["model"]) == (200, "alpha")
    status, props = _call(proxy.url("/props?model=beta"), method="GET")
    assert (status, props["model_alias"]) == (200, "beta")


def test_bad_requests_get_a_clear_4xx_and_reach_no_backend(fleet):
    proxy = fleet["gateway"]
    before = proxy.requests_seen()
    chat = "/v1/chat/completions"
    too_big = json.dumps({"model": "alpha", "prompt": "x" * (MAX_BODY + 10)}).encode()
    table = [
        ("unknown model", _call(proxy.url(chat), {"model": "gpt-9", "messages": []}), 404, "model_not_found"),
        ("no key", _call(proxy.url(chat), SHORT, key=""), 401, "authentication_error"),
        ("wrong key", _call(proxy.url(chat), SHORT, key="wrong-key-12345"), 401, "authentication_error"),
        ("body over the limit", _call(proxy.url(chat), too_big), 413, "invalid_request_error"),
        ("malformed JSON", _call(proxy.url(chat), b'{"model": "alpha", "prompt": '), 400, "invalid_request_error"),
        ("not an object", _call(proxy.url(chat), b'["alpha"]'), 400, "invalid_request_error"),
        ("model not a string", _call(proxy.url(chat), {"model": 7}), 400, "invalid_request_error"),
        ("endpoint not served", _call(proxy.url("/slots"), method="GET"), 404, "not_found_error"),
        ("slot action", _call(proxy.url("/slots/0?action=erase"), {}), 404, "not_found_error"),
        ("headers over the limit", _call(proxy.url(chat), SHORT, headers={"X-Pad": "a" * 40000}), 431,
         "invalid_request_error"),
        ("slow sender", _raw(proxy.port, b"POST /completion HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "
                             + CLIENT_KEY.encode() + b"\r\nContent-Length: 80\r\n\r\n{\"model\":", pause_after=0),
         408, "timeout_error"),
    ]
    for name, (status, answer), expected, kind in table:
        assert status == expected, (name, answer)
        assert answer["error"]["type"] == kind, name
    assert proxy.requests_seen() == before  # not one of them reached an engine


def test_streaming_passes_through_as_it_is_generated(fleet):
    """The first token reaches the client while the engine is still generating: nothing waits for the end."""
    proxy, beta = fleet["gateway"], fleet["beta"]
    request = urllib.request.Request(proxy.url("/v1/completions"), data=json.dumps(
        {"model": "beta", "prompt": "Once upon a time", "max_tokens": 400, "stream": True, "temperature": 0,
         "ignore_eos": True}).encode(),
        headers={"Authorization": f"Bearer {CLIENT_KEY}", "Content-Type": "application/json"})
    events = 0
    with urllib.request.urlopen(request, timeout=120) as answer:
        first = answer.readline()
        assert first.startswith(b"data: ")
        # Asked of the engine itself, behind the gateway's back: its slot is still generating.
        slots = urllib.request.Request(f"http://127.0.0.1:{beta.port}/slots",
                                       headers={"Authorization": f"Bearer {ENGINE_KEY}"})
        with urllib.request.urlopen(slots, timeout=10) as state:
            assert any(slot["is_processing"] for slot in json.loads(state.read()))
        for line in answer:
            events += line.startswith(b"data: ")
    assert events >= 400  # then the rest, and [DONE]


def _concurrently(calls):
    results = [None] * len(calls)

    def one(index, call):
        results[index] = call()

    threads = [threading.Thread(target=one, args=(index, call)) for index, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_each_replica_takes_its_slot_count_and_the_rest_queue_in_the_gateway(fleet):
    proxy = fleet["gateway"]
    body = {**SHORT, "n_predict": 24}
    results = _concurrently([lambda: _call(proxy.url("/completion"), body) for _index in range(6)])
    assert [status for status, _answer in results] == [200] * 6
    text = proxy.api.ask("show stat")
    header = text.splitlines()[0][2:].split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in text.splitlines()[1:]]
    alpha = {row["svname"]: row for row in rows if row["pxname"] == "model_alpha"}
    assert int(alpha["h1:main"]["smax"]) == 1  # never more than its one slot at once
    assert int(alpha["h2:main"]["smax"]) == 1
    assert int(alpha["BACKEND"]["qmax"]) >= 1  # the others waited in the gateway's queue


def _stream_on_alpha(proxy, body: dict, timeout: float) -> tuple[threading.Thread, dict, str]:
    """A streamed completion of "alpha" through the gateway, in a thread: the thread, what it received (``events``,
    and ``ended``, when its last line was read) and the replica whose session holds it."""
    streamed: dict = {}

    def stream():
        request = urllib.request.Request(proxy.url("/v1/completions"), data=json.dumps(
            {"model": "alpha", "prompt": "Once", "stream": True, "temperature": 0, **body}).encode(),
            headers={"Authorization": f"Bearer {CLIENT_KEY}", "Content-Type": "application/json"})
        events = []
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            for line in answer:
                if line.startswith(b"data: "):
                    events.append(line)
        streamed.update(events=events, ended=time.monotonic())

    thread = threading.Thread(target=stream)
    thread.start()
    deadline = time.monotonic() + 20
    busy = None
    while busy is None and time.monotonic() < deadline:
        busy = next((key[1] for key, state in proxy.stats().items() if key[0] == "model_alpha" and state.in_flight),
                    None)
        time.sleep(0.05)
    assert busy, "the stream never reached a replica"
    return thread, streamed, busy


def test_a_drain_lets_the_stream_finish_while_the_other_replica_serves(fleet):
    proxy = fleet["gateway"]
    thread, streamed, busy = _stream_on_alpha(proxy, {"max_tokens": 160}, timeout=120)
    other = "h2:main" if busy == "h1:main" else "h1:main"
    waiter = {}
    drainer = threading.Thread(target=lambda: waiter.update(gateway.drain(
        proxy.api, busy, timeout_s=120, **_paths(proxy))))
    drainer.start()
    time.sleep(0.3)
    # Drained: new requests go to the other replica only, and succeed.
    for _attempt in range(3):
        assert _call(proxy.url("/completion"), SHORT)[0] == 200
    assert proxy.stats()[("model_alpha", busy)].status == "DRAIN"
    drainer.join(timeout=150)
    thread.join(timeout=150)
    assert waiter["drained"] is True
    assert waiter["in_flight_left"] == 0
    assert streamed["events"][-1].strip() == b"data: [DONE]"  # the stream finished complete
    assert int(proxy.stats()[("model_alpha", other)].in_flight) == 0
    back = gateway.ready(proxy.api, busy, **_paths(proxy))
    assert back["ready"] is True
    # It was out of rotation for the whole stream it waited for (it ended after the drain began).
    assert back["out_s"] > 0
    assert back["words"] == f"{busy}: back in rotation after {back['out_s']:.1f} s out of it"
    assert proxy.stats()[("model_alpha", busy)].serving


def _drain_across_a_reload(fleet, servers) -> tuple[dict, str]:
    """A long stream on one of alpha's replicas, a reload to the servers ``servers`` gives (a function of the fleet's
    servers and the busy replica's name), then the busy replica's drain through the master socket: the drain's result
    and the replica. The drain must have waited for the stream, which ended whole."""
    proxy = fleet["gateway"]
    thread, streamed, busy = _stream_on_alpha(proxy, {"max_tokens": 600, "ignore_eos": True}, timeout=300)
    try:
        proxy.reload(servers(fleet["servers"], busy))
        # The new process does not see the stream; the old one, asked through the master socket, does.
        assert gateway.in_flight(proxy.api, None, busy) == (0, "")
        assert gateway.in_flight(proxy.api, proxy.master, busy) == (1, "")
        assert thread.is_alive()
        result = gateway.drain(proxy.api, busy, timeout_s=240, master=proxy.master, **_paths(proxy))
        returned = time.monotonic()
    finally:
        # The stream holds a replica's only slot: the next tests wait for it, whatever happened here.
        thread.join(timeout=300)
    assert result["waited_s"] > 1
    assert streamed["events"][-1].strip() == b"data: [DONE]"
    # HAProxy closes the session once the last byte is sent: the client may read it a moment after the drain ends.
    assert streamed["ended"] - returned < 5
    return result, busy


def test_a_drain_waits_for_a_stream_that_a_reload_left_in_the_old_process(fleet):
    """A stream that began before a reload is held by the old worker only: the new process counts nothing for its
    server. The drain reads the old worker through the master socket and waits for the stream's end."""
    result, busy = _drain_across_a_reload(fleet, lambda servers, busy: servers)
    assert (result["drained"], result["in_flight_left"]) == (True, 0)
    gateway.ready(fleet["gateway"].api, busy, **_paths(fleet["gateway"]))


def test_a_drain_waits_for_a_stream_on_a_server_the_reload_removed(fleet):
    """A moved replica's old copy: the reload that routes the new copy leaves the old one out of the configuration,
    while a stream that began before it still runs there, in the old worker. The drain before the old copy's removal
    finds no such server in the new process, and waits for the old worker's stream all the same."""
    proxy = fleet["gateway"]
    try:
        result, _busy = _drain_across_a_reload(
            fleet, lambda servers, busy: [server for server in servers if server.name != busy])
    finally:
        proxy.reload(fleet["servers"])  # the next tests route both replicas again
        _wait_all_up(proxy)
    assert (result["drained"], result["changed"], result["in_flight_left"]) == (True, False, 0)
    assert "not in this gateway: held by a process a reload left running" in result["words"]


def test_a_single_replica_restarting_keeps_requests_waiting_in_the_gateway(fleet):
    proxy, beta = fleet["gateway"], fleet["beta"]
    result = gateway.drain(proxy.api, "h3:main", timeout_s=30, **_paths(proxy))
    assert result["drained"] is True
    assert result["words"].startswith("h3:main: drained")
    beta.stop()
    answers = {}
    waiting = threading.Thread(target=lambda: answers.update(
        beta=_call(proxy.url("/completion"), {**SHORT, "model": "beta"})))
    waiting.start()
    time.sleep(1.0)
    assert waiting.is_alive()  # held in the gateway, not refused
    restarted = fleet["start"](fleet["beta_argv"], {})
    restarted.wait_healthy()
    gateway.ready(proxy.api, "h3:main", **_paths(proxy))
    waiting.join(timeout=30)
    assert answers["beta"][0] == 200
    assert answers["beta"][1]["model"] == "beta"
    fleet["beta"] = restarted


def test_drain_waits_while_the_only_other_replica_is_held_out(fleet):
    proxy = fleet["gateway"]
    assert gateway.drain(proxy.api, "h1:main", timeout_s=30, **_paths(proxy))["drained"]
    # h2 may not leave while h1 is out on purpose: it waits, and goes once the timeout passes, saying so.
    result = gateway.drain(proxy.api, "h2:main", timeout_s=1, **_paths(proxy))
    assert "every other replica of model_alpha is out of rotation (h1:main)" in result["words"]
    for server in ("h1:main", "h2:main"):
        gateway.ready(proxy.api, server, **_paths(proxy))
    assert gateway.drain(proxy.api, "nobody:main", timeout_s=1, **_paths(proxy))["drained"] is False


def test_reloads_under_load_drop_nothing_and_keep_a_drain(fleet):
    proxy = fleet["gateway"]
    stop = threading.Event()
    outcomes = []

    def load():
        while not stop.is_set():
            try:
                outcomes.append(_call(proxy.url("/completion"), SHORT, timeout=60)[0])
            except OSError as err:  # a refused or reset connection: what a reload must never cause
                outcomes.append(repr(err))

    workers = [threading.Thread(target=load) for _index in range(3)]
    for worker in workers:
        worker.start()
    servers = fleet["servers"]
    gateway.drain(proxy.api, "h3:main", timeout_s=30, **_paths(proxy))
    # A third alpha replica (nothing listens there yet: its checks take it down, and a request sent before that is
    # redispatched), then the same routes, then without it again: three reloads under load.
    extra = fleet_routes.Server(host="h4", instance="main", address="127.0.0.1", port=free_port(), slots=1,
                                model="alpha", key=ENGINE_KEY)
    for members in ([*servers, extra], [*servers, extra], servers):
        time.sleep(0.5)
        proxy.reload(members)
    time.sleep(0.5)
    # At least ten answers, however slow a busy machine makes the engines: the load ran through every reload.
    deadline = time.monotonic() + 60
    while len(outcomes) < 10 and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    for worker in workers:
        worker.join(timeout=60)
    assert len(outcomes) >= 10
    assert [outcome for outcome in outcomes if outcome != 200] == []
    # The drain was saved before each reload and loaded by the new process.
    assert proxy.stats()[("model_beta", "h3:main")].status == "DRAIN"
    gateway.ready(proxy.api, "h3:main", **_paths(proxy))


def _paths(proxy) -> dict:
    """The drain's lock and its record of drain times, in the test gateway's own directory."""
    return {"lock_path": str(proxy.directory / "drain.lock"), "times_path": str(proxy.directory / "drained.json")}


def _config_task(tmp_path, **more):
    settings = {"config_path": str(tmp_path / "haproxy.cfg"), "lua_path": str(LUA), "run_user": "", "chroot": "",
                "admin_socket": str(tmp_path / "none.sock"), "state_file": str(tmp_path / "state"), **more}
    return {"settings": settings, "api_keys": [CLIENT_KEY], "haproxy": haproxy_path(),
            "servers": [{"host": "h1", "instance": "main", "address": "10.0.0.1", "port": 8080, "slots": 2,
                         "model": "alpha"}],
            "server_keys": {"h1:main": ENGINE_KEY}}


def test_the_config_module_writes_once_keeps_a_foreign_file_and_hides_keys(tmp_path):
    """llamafleet.llamacpp.llama_gateway_config through ansible-playbook at -vvv: check mode writes nothing, a
    foreign file is kept once, a second run changes nothing, a file HAProxy refuses is not written, and no key
    shows in the output."""
    (tmp_path / "haproxy.cfg").write_text("# Debian's own\nglobal\n")
    args = _config_task(tmp_path)
    bad = _config_task(tmp_path, tls_certificate=str(tmp_path / "missing.pem"), port=9000)
    tasks = f"""
    - name: Preview
      llamafleet.llamacpp.llama_gateway_config: {json.dumps(args)}
      check_mode: true
      diff: true
      register: preview
    - name: Write
      llamafleet.llamacpp.llama_gateway_config: {json.dumps(args)}
      register: write
    - name: Again
      llamafleet.llamacpp.llama_gateway_config: {json.dumps(args)}
      register: again
    - name: A file HAProxy refuses
      llamafleet.llamacpp.llama_gateway_config: {json.dumps(bad)}
      register: refused
      ignore_errors: true
    - name: Keep the results
      ansible.builtin.set_fact:
        results: "{{{{ [preview, write, again, refused] }}}}"
    """
    proc, results = run_playbook(tmp_path, tasks, verbosity=3)
    assert proc.returncode == 0, proc.stdout[-4000:]
    preview, write, again, refused = results
    assert (preview["changed"], write["changed"], again["changed"]) == (True, True, False)
    assert "********" in preview["diff"]["after"]
    assert write["kept"] == str(tmp_path / "haproxy.cfg.before-llamafleet")
    assert (tmp_path / "haproxy.cfg.before-llamafleet").read_text() == "# Debian's own\nglobal\n"
    text = (tmp_path / "haproxy.cfg").read_text()
    assert text.startswith("# Written by llamafleet.llamacpp")
    assert "server h1:main 10.0.0.1:8080 maxconn 2" in text
    assert oct((tmp_path / "haproxy.cfg").stat().st_mode & 0o777) == "0o600"
    assert refused["failed"] is True
    assert "HAProxy's parser refused the new configuration (nothing was written)" in refused["msg"]
    assert "missing.pem" in refused["msg"]
    assert (tmp_path / "haproxy.cfg").read_text() == text
    for secret in (CLIENT_KEY, ENGINE_KEY):
        assert secret not in proc.stdout + proc.stderr


def test_the_backend_module_drains_and_puts_back(fleet, tmp_path):
    proxy = fleet["gateway"]
    socket_path = str(proxy.directory / "admin.sock")
    tasks = f"""
    - name: Drain
      llamafleet.llamacpp.llama_gateway_backend:
        instances: [{{host: h2, instance: main}}, {{host: nobody, instance: main}}]
        state: drained
        timeout_s: 30
        admin_socket: {socket_path}
      register: drained
    - name: Preview the return
      llamafleet.llamacpp.llama_gateway_backend:
        instances: [{{host: h2, instance: main}}]
        state: ready
        admin_socket: {socket_path}
      check_mode: true
      register: preview
    - name: Back
      llamafleet.llamacpp.llama_gateway_backend:
        instances: [{{host: h2, instance: main}}]
        state: ready
        admin_socket: {socket_path}
      register: back
    - name: Keep the results
      ansible.builtin.set_fact:
        results: "{{{{ [drained, preview, back] }}}}"
    """
    proc, results = run_playbook(tmp_path, tasks)
    assert proc.returncode == 0, proc.stdout[-4000:]
    drained, preview, back = results
    assert drained["changed"] is True
    assert [entry["words"].split(",")[0] for entry in drained["servers"]] == ["h2:main: drained",
                                                                              "nobody:main: not in this gateway"]
    assert preview["servers"][0]["words"] == "h2:main: would be put back in rotation"
    assert preview["changed"] is True
    assert back["changed"] is True
    assert proxy.stats()[("model_alpha", "h2:main")].serving
