# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway host's side: HAProxy's runtime API over its UNIX socket, the drain and the return to rotation, and
the configuration (with its routes file) written only after HAProxy's own parser accepts it.

The decisions are in ``_gateway/`` (pure); this file only asks, waits and writes. A drain is taken under a lock
on the gateway host (``flock``), so that two rollouts draining replicas of one model at the same time see each
other's drain: the second waits while the first holds the only other replica out.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import (
    config_file,
    gateway_judgement,
    haproxy_config,
    runtime_api,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import gateway_settings
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_bytes, write_atomically
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import Runner, read_unit_state

DRAIN_LOCK = "/run/llamafleet-gateway.lock"
# When each server was drained (wall clock, on the gateway host): its return to rotation says how long it was out.
DRAIN_TIMES = "/run/llamafleet-gateway-drained.json"
POLL_S = 0.25
# A master socket that is there but does not answer is asked again for this long: HAProxy's master executes itself
# again at each reload, and refuses connections meanwhile (a fraction of a second).
MASTER_GRACE_S = 5.0


class GatewayError(Exception):
    pass


class ConfigRefused(GatewayError):
    """The configuration was not written; ``result`` is what the module returns with the failure."""

    def __init__(self, message: str, result: dict):
        super().__init__(message)
        self.result = result


class RuntimeSocket:
    """HAProxy's runtime API: one command per connection (non-interactive mode), its whole answer back. The master
    CLI (``half_close``) answers once the command's side of the connection is shut: it keeps an open one waiting."""

    def __init__(self, path: str, timeout_s: float = 10.0, *, half_close: bool = False):
        self.path = path
        self.timeout_s = timeout_s
        self.half_close = half_close

    def ask(self, line: str) -> str:
        if "\n" in line or ";" in line:
            raise GatewayError(f"one command at a time: {line!r}")
        chunks = []
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout_s)
                sock.connect(self.path)
                sock.sendall(line.encode("ascii") + b"\n")
                if self.half_close:
                    sock.shutdown(socket.SHUT_WR)
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
        except OSError as err:
            verb = line.split(maxsplit=1)[0] if line.strip() else line
            raise GatewayError(f"HAProxy's runtime API at {self.path} did not answer {verb!r}: {err}") from err
        return b"".join(chunks).decode("utf-8", "replace")

    def states(self) -> list[runtime_api.ServerState]:
        try:
            return runtime_api.parse_stat(self.ask("show stat"))
        except ValueError as err:
            raise GatewayError(str(err)) from err

    def act(self, action: str, state: runtime_api.ServerState) -> None:
        answer = self.ask(runtime_api.command(action, state.backend, state.server)).strip()
        if answer:  # HAProxy answers a set command with nothing, or with why it refused it
            raise GatewayError(f"HAProxy refused to {action} {state.backend}/{state.server}: {answer}")


@contextlib.contextmanager
def drain_lock(path: str = DRAIN_LOCK) -> Iterator[None]:
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _drain_times(path: str) -> dict[str, float]:
    try:
        found = json.loads((read_bytes(path) or b"{}").decode("utf-8"))
    except (OSError, ValueError):
        return {}  # unreadable or damaged: the times are a report, nothing depends on them
    return {str(key): value for key, value in found.items() if isinstance(value, (int, float))} \
        if isinstance(found, dict) else {}


def _write_drain_times(path: str, times: Mapping[str, float]) -> None:
    with contextlib.suppress(OSError):  # a report only
        write_atomically(path, (json.dumps(dict(times), sort_keys=True) + "\n").encode("utf-8"), 0o600,
                         make_dirs=False)


def master_socket(path: str | None) -> RuntimeSocket | None:
    """HAProxy's master CLI (Debian's unit starts HAProxy with ``-S /run/haproxy-master.sock``), or None."""
    return RuntimeSocket(path, half_close=True) if path else None


def in_flight(api: RuntimeSocket, master: RuntimeSocket | None, server: str) -> tuple[int, str]:
    """The requests the server holds: in the current process, and in every process a reload left finishing its
    own (read through the master socket; a stream that began before the reload is there only). With them, what
    could not be counted ("" when nothing)."""
    left = sum(state.in_flight for state in runtime_api.find(api.states(), server))
    if master is None:
        return left, ""
    if not os.path.exists(master.path):
        return left, (f"HAProxy's master socket {master.path} is missing: the requests of processes a reload left "
                      "running were not counted")
    try:
        for pid in runtime_api.old_workers(master.ask("show proc")):
            answer = master.ask(runtime_api.in_worker(pid, "show stat"))
            if runtime_api.worker_gone(answer):
                continue  # it finished its last request and exited meanwhile
            left += sum(state.in_flight + state.queued
                        for state in runtime_api.find(runtime_api.parse_stat(answer), server))
    except (GatewayError, ValueError) as err:
        return left, f"the processes a reload left running could not be read: {err}"
    return left, ""


def _wait_in_flight(api: RuntimeSocket, master: RuntimeSocket | None, server: str, deadline: float, *,
                    clock: Callable[[], float], sleep: Callable[[float], None]) -> tuple[int, str]:
    """Wait until the server holds no request in any process (in_flight), or the deadline: what was left, and what
    could not be counted."""
    unanswered_since = None
    while True:
        left, unseen = in_flight(api, master, server)
        # Nothing counted, but the master did not answer (it may be starting again after a reload): a stream held by
        # an old process would go uncounted, so it is asked again, for a while.
        if unseen and master is not None and os.path.exists(master.path):
            unanswered_since = clock() if unanswered_since is None else unanswered_since
            if clock() - unanswered_since < MASTER_GRACE_S and clock() < deadline:
                sleep(POLL_S)
                continue
        else:
            unanswered_since = None
        if not left or clock() >= deadline:
            return left, unseen
        sleep(POLL_S)


def drain(api: RuntimeSocket, server: str, timeout_s: float, *, master: RuntimeSocket | None = None,
          lock_path: str = DRAIN_LOCK, times_path: str = DRAIN_TIMES, clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep, wall: Callable[[], float] = time.time) -> dict:
    """Take a server out of rotation in every backend that has it, then wait until it holds no request (or the
    timeout), counting those of the processes a reload left running (``master``, the master CLI). Returns what
    happened, for the report; when it leaves rotation is recorded (``times_path``)."""
    started = clock()
    deadline = started + timeout_s
    waited_for_others = ""
    while True:
        with drain_lock(lock_path):
            states = api.states()
            targets = runtime_api.find(states, server)
            if not targets:
                break
            blocked = [why for target in targets for allowed, why in [runtime_api.may_drain(states, target)]
                       if not allowed]
            if not blocked or clock() >= deadline:
                changed = any(not target.status.startswith("DRAIN") for target in targets)
                for target in targets:
                    api.act("drain", target)
                times = _drain_times(times_path)
                if changed or server not in times:
                    _write_drain_times(times_path, {**times, server: round(wall(), 3)})
                break
        waited_for_others = blocked[0]
        sleep(POLL_S)
    if not targets:
        # Not in this gateway's configuration (a moved replica's old copy, once the gateway routes its new one): a
        # stream that began before that reload is still held by a process the reload left running, on this server.
        left, unseen = in_flight(api, master, server)
        if not left and not (unseen and master is not None and os.path.exists(master.path)):
            return {"server": server, "drained": False, "changed": False, "words": f"{server}: not in this gateway"}
        left, unseen = _wait_in_flight(api, master, server, deadline, clock=clock, sleep=sleep)
        waited = clock() - started
        words = runtime_api.drained_words(server, waited, left, int(timeout_s), unseen)
        return {"server": server, "drained": True, "changed": False, "in_flight_left": left,
                "waited_s": round(waited, 2), "words": f"{words} (not in this gateway: held by a process a reload left "
                                                       "running)"}
    left, unseen = _wait_in_flight(api, master, server, deadline, clock=clock, sleep=sleep)
    waited = clock() - started
    words = runtime_api.drained_words(server, waited, left, int(timeout_s), unseen)
    if waited_for_others:
        words += f" (first {waited_for_others})"
    return {"server": server, "drained": True, "changed": changed, "in_flight_left": left, "waited_s": round(waited, 2),
            "words": words}


def ready(api: RuntimeSocket, server: str, *, lock_path: str = DRAIN_LOCK, times_path: str = DRAIN_TIMES,
          wall: Callable[[], float] = time.time) -> dict:
    """Back in rotation: its health up at once (the rollout has just verified it), then ready. Says how long it was
    out of rotation when its drain was recorded (``out_s``)."""
    targets = runtime_api.find(api.states(), server)
    if not targets:
        return {"server": server, "ready": False, "changed": False, "words": f"{server}: not in this gateway"}
    changed = any(not target.serving for target in targets)
    for target in targets:
        api.act("up", target)
        api.act("ready", target)
    result = {"server": server, "ready": True, "changed": changed,
              "words": f"{server}: back in rotation" if changed else f"{server}: in rotation"}
    with drain_lock(lock_path):
        times = _drain_times(times_path)
        since = times.pop(server, None)
        if since is not None:
            _write_drain_times(times_path, times)
    if since is not None and changed:
        result["out_s"] = round(max(wall() - since, 0.0), 1)
        result["words"] += f" after {result['out_s']:.1f} s out of it"
    return result


def rotate(api: RuntimeSocket, servers: Iterable[str], state: str, timeout_s: float,
           check_mode: bool, *, master: RuntimeSocket | None = None) -> Iterator[dict]:
    """Each server drained (``state`` "drained") or back in rotation ("ready"), one result at a time, so that a
    GatewayError still leaves the results of the ones before it; in check mode, what would be done."""
    if check_mode:
        states = api.states()
        for server in servers:
            yield runtime_api.preview(states, server, state)
        return
    for server in servers:
        if state == "drained":
            yield drain(api, server, timeout_s, master=master, lock_path=DRAIN_LOCK, times_path=DRAIN_TIMES)
        else:
            yield ready(api, server, lock_path=DRAIN_LOCK, times_path=DRAIN_TIMES)


def rotate_all(api: RuntimeSocket, servers: Iterable[str], state: str, timeout_s: float,
               check_mode: bool, *, master: RuntimeSocket | None = None) -> tuple[dict, str]:
    """``rotate`` over every server: (the module's result, why it stopped or ""). A GatewayError stops the
    rotation; the result then holds the servers done before it (``servers``, no ``changed``)."""
    results: list[dict] = []
    try:
        for result in rotate(api, servers, state, timeout_s, check_mode, master=master):
            results.append(result)
    except GatewayError as err:
        return {"servers": results}, str(err)
    return {"changed": any(entry.get("changed") for entry in results), "servers": results}, ""


def check_config(run: Runner, haproxy: str, text: str, directory: str) -> str:
    """HAProxy's own parser on the text, written to a private file next to the configuration; its complaint
    ("" when it accepts the file). ``run`` runs a command as AnsibleModule.run_command does: (rc, out, err)."""
    descriptor, path = tempfile.mkstemp(prefix=".llamafleet-check-", suffix=".cfg", dir=directory)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        rc, out, err = run([haproxy, "-c", "-f", path])
    finally:
        os.unlink(path)
    if rc == 0:
        return ""
    said = [line for line in (err + out).splitlines() if "[ALERT]" in line] or [f"haproxy -c exited {rc}"]
    return "\n".join(said).replace(path, "<new configuration>")


def save_server_state(api: RuntimeSocket, path: str) -> None:
    """The servers' states (drained ones included) into the file the next process loads at its start."""
    write_atomically(path, api.ask("show servers state").encode("utf-8"), 0o600, make_dirs=False)


def _read_text(path: str) -> str:
    return (read_bytes(path) or b"").decode("utf-8")


def _write_private(path: str, text: str) -> None:
    """Root-only: the configuration and the routes file hold the engines' keys."""
    write_atomically(path, text.encode("utf-8"), 0o600, make_dirs=False)


def _kept_as(path: str, mode: int) -> bool:
    """The file has exactly ``mode`` and, when this runs as root, belongs to root (write_atomically's owner)."""
    stat = os.stat(path)
    return stat.st_mode & 0o7777 == mode and (os.geteuid() != 0 or (stat.st_uid, stat.st_gid) == (0, 0))


def write_lua(path: str, text: str, check_mode: bool) -> bool:
    """The gateway's Lua actions (root, 0644), written when their text, owner or mode differs; whether it did
    (HAProxy loads them at its start or reload only). Raises ConfigRefused when their directory is missing."""
    if read_bytes(path) == text.encode("utf-8") and _kept_as(path, 0o644):
        return False
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        if check_mode:
            return True  # a new gateway, before HAProxy is installed
        raise ConfigRefused(f"{directory} does not exist: is HAProxy installed?", {"path": path})
    if not check_mode:
        write_atomically(path, text.encode("utf-8"), 0o644, make_dirs=False)
    return True


def ensure_state_file(path: str, check_mode: bool) -> bool:
    """The (empty) file the servers' states are saved to before a reload: HAProxy's master loads it at each start,
    so it must exist before the first one. Whether it was made."""
    if os.path.exists(path) or not os.path.isdir(os.path.dirname(path)):
        return False  # there, or HAProxy is not installed yet (check mode on a new gateway)
    if not check_mode:
        write_atomically(path, b"", 0o600, make_dirs=False)
    return True


def haproxy_state(admin_socket: str, run: Runner, *, ask: bool = True) -> tuple[bool, list | None]:
    """Whether HAProxy runs and starts at boot, and its servers' states from its runtime API: None when it does not
    run, when ``ask`` is false, or when the API cannot be read."""
    unit = read_unit_state(run, "haproxy.service")
    running = unit.active_state == "active" and unit.unit_file_state == "enabled"
    if not running or not ask:
        return running, None
    try:
        return running, RuntimeSocket(admin_socket).states()
    except (GatewayError, OSError):
        return running, None


def rotation_reading(settings, servers: Sequence[str], run: Runner, *, reload: bool) -> dict:
    """Whether HAProxy runs and starts at boot (``running``), and which of ``servers`` (the verified instances' server
    names) this gateway has out of rotation (``out_of_rotation``): all of them when HAProxy does not run or is about
    to reload, or when its runtime API cannot be read; none that it does not route. The role starts HAProxy and puts
    servers back only when this says so, so that a gateway that is as it should be costs one module run."""
    names = list(servers)
    running, states = haproxy_state(settings.admin_socket, run, ask=not reload and bool(names))
    if states is None:
        return {"running": running, "out_of_rotation": names}
    out = [name for name in names if any(not target.serving for target in runtime_api.find(states, name))]
    return {"running": running, "out_of_rotation": out}


def _digest(path: str) -> str:
    """The file's digest as the controller computes it (gateway_judgement.digest), "" when it is missing or
    unreadable."""
    try:
        data = read_bytes(path)
    except OSError:
        return ""
    return "" if data is None else gateway_judgement.digest(data)


def gateway_reading(paths: Mapping[str, str], run: Runner) -> dict:
    """What a gateway host has, read in the host judge's run so that a run that changes nothing costs the gateway no
    run of its own: the digests of its configuration, routes file and Lua actions (none holds a key in clear: the
    digest of a file says nothing of what is in it), whether the Lua actions are root's with mode 0644, whether the
    servers' states file exists, whether HAProxy runs and starts at boot, and which servers its runtime API has out
    of rotation (``answered`` false when it could not be asked). ``paths``: the gateway's ``config_path``,
    ``lua_path``, ``state_file`` and ``admin_socket``. The controller compares this with what it would write
    (_gateway/gateway_judgement.py)."""
    config = paths["config_path"]
    running, states = haproxy_state(paths["admin_socket"], run)
    found = {"config": _digest(config), "routes": _digest(config_file.routes_path(config)),
             "lua": _digest(paths["lua_path"]), "state_file": os.path.exists(paths["state_file"]),
             "running": running, "answered": states is not None,
             "out_of_rotation": sorted({state.server for state in states or () if not state.serving})}
    try:
        found["lua_kept"] = bool(found["lua"]) and _kept_as(paths["lua_path"], 0o644)
    except OSError:
        found["lua_kept"] = False
    return found


def write_config(raw_settings: Mapping, servers: Sequence[Mapping], server_keys: Mapping[str, str],
                 keep_hosts: Iterable[str], notes: Iterable[str], *, haproxy: str, run: Runner, check_mode: bool,
                 diff: bool, lua: str | None = None, verified: Sequence[str] = ()) -> dict:
    """The gateway's configuration and routes file (_gateway/config_file.py), each written when it changed: the
    configuration once ``haproxy -c`` accepts it, the servers' states saved for the reload and a foreign file copied
    aside first. With ``lua``, the Lua actions are written first (when they differ: HAProxy then reloads); the file
    of the servers' states is made when missing; and the result says whether HAProxy runs and which ``verified``
    servers are out of rotation (rotation_reading). Returns the module's result; raises ConfigRefused when nothing
    may be written."""
    settings, errors = gateway_settings(raw_settings)
    path = settings.config_path
    routes_path = config_file.routes_path(path)
    try:
        routes_before = _read_text(routes_path)
    except OSError:
        routes_before = ""  # unreadable: nothing is kept, and it is written anew
    files, file_errors = config_file.gateway_files(settings, routes_before, servers=servers, server_keys=server_keys,
                                                   keep_hosts=keep_hosts, notes=notes)
    errors += file_errors
    if errors:
        raise ConfigRefused("the gateway cannot be configured: " + "; ".join(errors), {"errors": errors})
    lua_changed = write_lua(settings.lua_path, lua, check_mode) if lua is not None else False
    state_made = ensure_state_file(settings.state_file, check_mode)
    before = _read_text(path)
    changed = files.config != before or files.routes_file != routes_before or lua_changed or state_made
    result = {"changed": changed, "path": path, "notes": files.routes.notes,
              "reload": files.config != before or lua_changed,
              "default_model": haproxy_config.default_model(settings, files.routes),
              "models": config_file.routed_models(files.routes)}
    if diff:
        # Every engine key either text can hold: the given ones, and those of the routes file, which the previous
        # configuration was written with and the kept hosts' servers still use.
        keys = [*server_keys.values(), *config_file.routes_keys(routes_before)]
        result["diff"] = {"before": config_file.masked(before, keys), "after": config_file.masked(files.config, keys),
                          "before_header": path, "after_header": path}
    if result["reload"]:
        _check_and_prepare(settings, files.config, before, result, haproxy=haproxy, run=run, check_mode=check_mode)
    if changed and not check_mode:
        _write_private(routes_path, files.routes_file)
        if files.config != before:
            _write_private(path, files.config)
    result.update(rotation_reading(settings, verified, run, reload=result["reload"]))
    return result


def _check_and_prepare(settings, text: str, before: str, result: dict, *, haproxy: str, run: Runner,
                       check_mode: bool) -> None:
    """Before a new configuration is written: HAProxy's parser accepts it, the running gateway's servers' states are
    saved for the reload, and a file that was not ours is copied aside."""
    path = settings.config_path
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise ConfigRefused(f"{directory} does not exist: is HAProxy installed?", result)
    complaint = check_config(run, haproxy, text, directory)
    if complaint:
        raise ConfigRefused(f"HAProxy's parser refused the new configuration (nothing was written): {complaint}",
                            result)
    if check_mode:
        return
    if os.path.exists(settings.admin_socket):
        try:  # a running gateway: keep its drained servers drained across the reload
            save_server_state(RuntimeSocket(settings.admin_socket), settings.state_file)
        except (GatewayError, OSError) as err:
            result.setdefault("warnings", []).append(f"the servers' states were not saved before the reload: {err}")
    copy = config_file.foreign_copy_path(path)
    if config_file.keeps_foreign_copy(before, os.path.exists(copy)):
        _write_private(copy, before)
        result["kept"] = copy
