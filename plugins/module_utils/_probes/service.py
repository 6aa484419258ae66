"""Readings of a running instance: its unit (systemctl show), its main process (/proc), its HTTP answers.

Thin I/O for the apply step; the decisions are in ``_judgements/running_state.py`` and ``_planner/expectations.py``.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import (
    SHOW_PROPERTIES,
    UnitState,
    parse_cmdline,
    parse_deleted_maps,
    parse_environ,
    parse_show,
    unit_state,
)

# (argv) -> (rc, stdout, stderr): AnsibleModule.run_command, or a stand-in in tests.
Runner = Callable[[Sequence[str]], tuple[int, str, str]]
# Status of an HTTP reading when nothing answered (connection refused, no socket file, reset).
NO_LISTENER = -1
# Status when something accepted the connection but did not answer in time.
NO_ANSWER = 0
PROPS_MAX_BYTES = 1 << 20


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def read_unit_state(run: Runner, unit: str, proc_root: str = "/proc") -> UnitState:
    """systemctl's view of the unit and, when it has a main process, that process's argv and environment."""
    rc, out, _err = run(["systemctl", "show", "--property=" + ",".join(SHOW_PROPERTIES), "--", unit])
    show = parse_show(out) if rc == 0 else {}
    state = unit_state(show)
    if state.main_pid <= 0:
        return state
    cmdline = _read_bytes(f"{proc_root}/{state.main_pid}/cmdline")
    environ = _read_bytes(f"{proc_root}/{state.main_pid}/environ")
    maps = _read_bytes(f"{proc_root}/{state.main_pid}/maps")
    return unit_state(
        show,
        cmdline=parse_cmdline(cmdline or b""),
        environ=parse_environ(environ) if environ is not None else None,
        deleted_maps=parse_deleted_maps((maps or b"").decode("utf-8", "surrogateescape")),
    )


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a UNIX socket (an engine whose --host is a .sock path)."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


def http_get(url: str, unix_socket: str = "", timeout: float = 5.0, headers: Mapping[str, str] | None = None):
    """(status, body) of a GET; NO_LISTENER when nothing is there, NO_ANSWER when it did not answer in time."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    if unix_socket:
        conn = _UnixConnection(unix_socket, timeout)
    else:
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout)
    try:
        conn.request("GET", path, headers=dict(headers or {}))
        response = conn.getresponse()
        return response.status, response.read(PROPS_MAX_BYTES)
    except (ConnectionRefusedError, FileNotFoundError, ConnectionResetError, BrokenPipeError):
        return NO_LISTENER, b""
    except TimeoutError:
        return NO_ANSWER, b""
    except (OSError, http.client.HTTPException):
        return NO_LISTENER, b""
    finally:
        conn.close()


def get_json(url: str, unix_socket: str = "", timeout: float = 5.0, headers: Mapping[str, str] | None = None):
    """The JSON of a GET, or None when it gave none (not 200, not JSON)."""
    status, body = http_get(url, unix_socket, timeout, headers)
    if status != 200:
        return None
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def read_props(url: str, unix_socket: str = "", timeout: float = 5.0, headers: Mapping[str, str] | None = None):
    """The engine's /props as a mapping, or None when it gave none (not 200, not JSON)."""
    data = get_json(urllib.parse.urljoin(url, "/props"), unix_socket, timeout, headers)
    return data if isinstance(data, dict) else None


def wait_healthy(
    url: str,
    unix_socket: str,
    *,
    timeout_s: float,
    listen_timeout_s: float,
    delay_s: float,
    still_starting: Callable[[], bool],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, str]:
    """Poll /health until 200. Returns (last status, why it stopped early or "").

    Stops early when the unit is no longer starting (the engine exited: a bad flag, a crash loop) or when
    nothing has listened for ``listen_timeout_s``; 503 (loading the model) waits up to ``timeout_s``.
    """
    start = clock()
    last_heard = start
    status = NO_LISTENER
    while True:
        status, _body = http_get(url, unix_socket, timeout=min(5.0, max(delay_s, 1.0)))
        now = clock()
        if status == 200:
            return status, ""
        if status != NO_LISTENER:
            last_heard = now
        if not still_starting():
            return status, "the engine exited while starting"
        if status == NO_LISTENER and now - last_heard >= listen_timeout_s:
            return status, f"nothing listened for {int(listen_timeout_s)} s after the start"
        if now - start >= timeout_s:
            return status, f"/health answered {status}, not 200, for {int(timeout_s)} s"
        sleep(delay_s)


def journal_tail(run: Runner, unit: str, lines: int, since: str = "") -> list[str]:
    """The unit's last journal lines (its engine's own words), newest last."""
    argv = ["journalctl", "--no-pager", "--output=cat", "-u", unit, "-n", str(int(lines))]
    if since:
        argv += ["--since", since]
    rc, out, _err = run(argv)
    return out.splitlines()[-int(lines):] if rc == 0 else []
