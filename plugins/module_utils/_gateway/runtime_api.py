# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the gateway's runtime API says, and what to do with a server before and after its engine restarts.

Pure: the commands as text, the answers parsed, the decisions taken from them. The socket itself is read and
written by ``_converge/gateway.py``.

A server is drained (``set server B/S state drain``): it takes no new request, and the ones it holds finish.
Its requests in flight are HAProxy's current sessions for it (``scur`` in ``show stat``), in the current process and
in the ones a reload left finishing their requests (the "old workers" of the master CLI's ``show proc``, each asked
through the master socket as ``@!<pid> show stat``): a stream that began before a reload is held by the old process
only, and the current one counts nothing for it. Back in rotation
(``state ready``), its health is set up at once: the rollout has just seen /health and /props answer, so it
need not wait for the next check.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import server_name
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import BY_NAME

# The drain's wait: its default and range are the gateway setting's (llama_gateway_drain_timeout_s).
DRAIN_TIMEOUT = BY_NAME["drain_timeout_s"]

# What HAProxy says of a server's status in show stat: "UP", "DOWN", "DRAIN", "MAINT", "MAINT (via ...)",
# "UP 1/2" (going down), "DOWN 1/2" (going up), "NOLB", "no check".
_UP = re.compile(r"UP( \d+/\d+)?\Z|no check\Z")
# The names this module sends: HAProxy proxy and server names (fleet_routes.proxy_name), nothing else.
_PROXY_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


@dataclass(frozen=True)
class ServerState:
    backend: str
    server: str
    status: str  # HAProxy's words
    in_flight: int  # scur: requests it holds now
    queued: int  # qcur: requests waiting for this server itself

    @property
    def serving(self) -> bool:
        """Takes new requests: up by its checks, not drained, not in maintenance."""
        return bool(_UP.match(self.status))

    @property
    def held_out(self) -> bool:
        """Taken out of rotation on purpose (drain or maintenance), as opposed to down by its checks."""
        return self.status.startswith(("DRAIN", "MAINT"))


def _number(text: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return 0


def server_names(instances: Iterable[Mapping], timeout_s: int) -> tuple[list[str], str]:
    """The gateway's server names of the instances to drain or put back (each ``host`` and ``instance``), or why the
    request is refused ("" when it is not)."""
    low, high = DRAIN_TIMEOUT.bounds
    if not low <= timeout_s <= high:
        return [], f"timeout_s={timeout_s}: a drain waits from {low} to {high} seconds"
    names = []
    for index, entry in enumerate(instances):
        host, instance = str(entry.get("host") or ""), str(entry.get("instance") or "")
        if not host or not instance:
            return [], f"instances[{index}]: give both host and instance"
        names.append(server_name(host, instance))
    return names, ""


def parse_stat(text: str) -> list[ServerState]:
    """The servers of ``show stat`` (its CSV; the frontend and backend rows left out)."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ValueError(f"not the answer of show stat: {text[:200]!r}")
    reader = csv.DictReader([lines[0][2:], *lines[1:]])
    states = []
    for row in reader:
        name = row.get("svname") or ""
        if name in ("FRONTEND", "BACKEND") or not name:
            continue
        states.append(ServerState(backend=row.get("pxname") or "", server=name, status=row.get("status") or "",
                                  in_flight=_number(row.get("scur") or ""), queued=_number(row.get("qcur") or "")))
    return states


def old_workers(show_proc: str) -> list[int]:
    """The process ids of the workers a reload left finishing their requests, from the master CLI's ``show proc``
    (the rows under its ``# old workers`` heading)."""
    if not show_proc.startswith("#<PID>"):
        raise ValueError(f"not the answer of show proc: {show_proc[:200]!r}")
    pids, section = [], ""
    for line in show_proc.splitlines()[1:]:
        if line.startswith("#"):
            section = line[1:].strip()
            continue
        fields = line.split()
        if section == "old workers" and fields and fields[0].isdigit():
            pids.append(int(fields[0]))
    return pids


def in_worker(pid: int, line: str) -> str:
    """A runtime API command sent through the master socket to one worker process."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        raise ValueError(f"{pid!r} is not a process id")
    return f"@!{pid} {line}"


def worker_gone(answer: str) -> bool:
    """The master's answer when the worker has exited meanwhile (its last request finished)."""
    return answer.startswith("Can't find the target PID")


def command(action: str, backend: str, server: str) -> str:
    """One runtime API command for one server: "drain", "ready" (back in rotation) or "up" (its health)."""
    for name in (backend, server):
        if not _PROXY_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a HAProxy proxy or server name")
    if action == "drain":
        return f"set server {backend}/{server} state drain"
    if action == "ready":
        return f"set server {backend}/{server} state ready"
    if action == "up":
        return f"set server {backend}/{server} health up"
    raise ValueError(f"unknown action {action!r}")


def find(states: Iterable[ServerState], server: str) -> list[ServerState]:
    """Every backend's entry for this server name (an instance serves one model, so at most one in practice)."""
    return [state for state in states if state.server == server]


def may_drain(states: Iterable[ServerState], target: ServerState) -> tuple[bool, str]:
    """Whether the target may leave rotation now, and why not.

    A model with other replicas keeps one in rotation: while every other replica is held out on purpose (another
    rollout drained it, and it will come back), the target waits. Replicas that are down by their checks do not
    count: they could not serve anyway. A single replica is drained: its requests wait in the gateway meanwhile.
    """
    others = [state for state in states if state.backend == target.backend and state.server != target.server]
    if not others or any(state.serving for state in others):
        return True, ""
    held = [state.server for state in others if state.held_out]
    if held:
        return False, (f"every other replica of {target.backend} is out of rotation ({', '.join(held)}); "
                       "waiting for one to come back")
    return True, ""


def preview(states: Iterable[ServerState], server: str, state: str) -> dict:
    """What draining the server (``state`` "drained") or putting it back ("ready") would change, for check mode."""
    found = find(states, server)
    if state == "drained":
        change = any(not entry.status.startswith("DRAIN") for entry in found)
        verb = "would be drained" if change else "drained already"
    else:
        change = any(not entry.serving for entry in found)
        verb = "would be put back in rotation" if change else "in rotation"
    return {"server": server, "changed": change,
            "words": f"{server}: {verb}" if found else f"{server}: not in this gateway"}


def drained_words(server: str, waited_s: float, left: int, timeout_s: int, unseen: str = "") -> str:
    """What the report says of a drain; ``unseen`` says which requests it could not count ("" when it counted
    them all)."""
    if unseen:
        return drained_words(server, waited_s, left, timeout_s) + f" ({unseen})"
    if left:
        return (f"{server}: {left} request(s) still in flight after the drain timeout ({timeout_s} s); "
                "restarting anyway")
    return f"{server}: drained, no request in flight (waited {waited_s:.1f} s)"
