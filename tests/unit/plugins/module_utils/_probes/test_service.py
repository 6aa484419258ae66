"""Readings of a running instance (service.py): HTTP over TCP and a UNIX socket against a real local server,
systemctl and /proc through a recorded runner and a directory laid out like /proc."""

import http.server
import json
import socketserver
import threading

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import service
from tests.unit.plugins.module_utils._readings.test_unit_state import SHOW
from tests.unit.support.clock import Clock

PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1, "model_path": "/m/a.gguf",
         "build_info": "b11434-unknown"}


class Engine(http.server.BaseHTTPRequestHandler):
    """Answers like llama-server: /health 503 while "loading", then 200; /props needs the key when one is set."""

    answers: list  # statuses of /health, one per request, the last repeated
    key = ""

    def do_GET(self):
        if self.path == "/health":
            status = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            body = b'{"status":"ok"}'
        elif self.path == "/props":
            allowed = not self.key or self.headers.get("Authorization") == f"Bearer {self.key}"
            status, body = (200, json.dumps(PROPS).encode()) if allowed else (401, b"{}")
        else:
            status, body = 404, b""
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@pytest.fixture
def engine():
    Engine.answers, Engine.key = [200], ""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/health"
    server.shutdown()
    server.server_close()


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@pytest.fixture
def unix_engine(tmp_path):
    Engine.answers, Engine.key = [200], ""
    path = str(tmp_path / "engine.sock")
    server = _UnixServer(path, Engine)
    server.get_request = lambda: (server.socket.accept()[0], ("local", 0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield path
    server.shutdown()
    server.server_close()


def test_health_and_props_over_tcp(engine):
    assert service.http_get(engine)[0] == 200
    assert service.read_props(engine) == PROPS


def test_props_with_a_key(engine):
    Engine.key = "k-1"
    assert service.read_props(engine) is None
    assert service.read_props(engine, headers={"Authorization": "Bearer k-1"}) == PROPS


def test_health_over_a_unix_socket(unix_engine):
    assert service.http_get("http://localhost/health", unix_engine)[0] == 200
    assert service.read_props("http://localhost/health", unix_engine) == PROPS


def test_nothing_listening(tmp_path):
    assert service.http_get("http://127.0.0.1:9/health", timeout=1)[0] == service.NO_LISTENER
    assert service.http_get("http://localhost/health", str(tmp_path / "none.sock"))[0] == service.NO_LISTENER
    assert service.read_props("http://127.0.0.1:9/health") is None


def _wait(url, clock, starting=lambda: True, timeout_s=60, listen_timeout_s=10):
    return service.wait_healthy(url, "", timeout_s=timeout_s, listen_timeout_s=listen_timeout_s, delay_s=2,
                                still_starting=starting, clock=clock, sleep=clock.sleep)


def test_wait_until_the_model_is_loaded(engine):
    Engine.answers = [503, 503, 503, 200]
    clock = Clock()
    assert _wait(engine, clock) == (200, "")
    assert clock.now == 6


def test_wait_ends_when_loading_takes_too_long(engine):
    Engine.answers = [503]
    assert _wait(engine, Clock(), timeout_s=10) == (503, "/health answered 503, not 200, for 10 s")


def test_wait_ends_early_when_the_engine_exits(engine):
    Engine.answers = [503]
    assert _wait(engine, Clock(), starting=lambda: False) == (503, "the engine exited while starting")


def test_wait_ends_when_nothing_listens():
    status, why = _wait("http://127.0.0.1:9/health", Clock(), listen_timeout_s=4)
    assert (status, why) == (service.NO_LISTENER, "nothing listened for 4 s after the start")


def _runner(calls, rc=0, out=SHOW):
    def run(argv):
        calls.append(list(argv))
        return rc, out, ""

    return run


def test_unit_state_reads_the_main_process(tmp_path):
    proc = tmp_path / "616"
    proc.mkdir()
    (proc / "cmdline").write_bytes(b"/e\0-c\x004096\0")
    (proc / "environ").write_bytes(b"XDG_CONFIG_HOME=/tmp/x\0")
    calls = []
    state = service.read_unit_state(_runner(calls), "llama-server-main.service", proc_root=str(tmp_path))
    assert calls[0][:3] == ["systemctl", "show", "--property=" + ",".join(service.SHOW_PROPERTIES)]
    assert calls[0][-2:] == ["--", "llama-server-main.service"]
    assert state.cmdline == ("/e", "-c", "4096")
    assert state.environ == {"XDG_CONFIG_HOME": "/tmp/x"}


def test_unit_state_without_a_readable_process(tmp_path):
    state = service.read_unit_state(_runner([]), "u.service", proc_root=str(tmp_path))
    assert (state.main_pid, state.cmdline, state.environ) == (616, (), None)
    stopped = service.read_unit_state(_runner([], out=SHOW.replace("MainPID=616", "MainPID=0")), "u")
    assert stopped.main_pid == 0
    assert not service.read_unit_state(_runner([], rc=1), "u").loaded


def test_journal_tail():
    calls = []
    lines = service.journal_tail(_runner(calls, out="a\nb\nc\n"), "u.service", 2, since="@100")
    assert lines == ["b", "c"]
    assert calls[0] == ["journalctl", "--no-pager", "--output=cat", "-u", "u.service", "-n", "2", "--since", "@100"]
    assert service.journal_tail(_runner([], rc=1), "u", 5) == []
