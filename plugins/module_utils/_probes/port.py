"""Who listens on the service's TCP port (spec section 17, adapted).

Loki only knew "something answers on that port". Here we read the kernel's
socket tables and name the owner (pid, command, systemd unit), because the
answer decides what to do: a port held by this instance's own unit is not a
conflict (the role is about to restart it), anything else is.

``/proc/net/tcp`` lists the sockets of the reader's network namespace, so the
module must run in the namespace the service will use (the host's, for a
systemd unit). Naming another user's process needs root (``/proc/<pid>/fd``
is private); without it the owner is reported as unknown, never guessed.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import sys
from dataclasses import dataclass

_LISTEN = "0A"  # TCP_LISTEN in include/net/tcp_states.h
_SOCKET_LINK = re.compile(r"^socket:\[(\d+)\]\Z")
# Docker's cgroup names: cgroupfs driver ".../docker/<id>", systemd driver ".../docker-<id>.scope".
_CONTAINER_ID = re.compile(r"(?:^|/)(?:docker-)?([0-9a-f]{64})(?:\.scope)?\Z")


@dataclass(frozen=True)
class Listener:
    """One listening socket: address as text (IPv4-mapped IPv6 shown as IPv4), port, socket inode."""

    addr: str
    port: int
    inode: int


@dataclass(frozen=True)
class Owner:
    """A process holding a socket; pid 0 = the socket exists but its process is not visible to us."""

    pid: int
    comm: str = ""
    unit: str = ""
    container: str = ""  # Docker container ID, when the process runs in one


# ---------------------------------------------------------------------------
# /proc/net/tcp{,6}
# ---------------------------------------------------------------------------


def _decode_addr(hex_addr: str, ipv6: bool) -> str:
    # The kernel prints each 32-bit word of the address with %08X, i.e. in the
    # host's byte order: on little-endian machines every word reads reversed.
    raw = bytes.fromhex(hex_addr)
    if len(raw) != (16 if ipv6 else 4):
        raise ValueError(f"bad address length: {hex_addr}")
    if sys.byteorder == "little":
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    if not ipv6:
        return str(ipaddress.IPv4Address(raw))
    address = ipaddress.IPv6Address(raw)
    return str(address.ipv4_mapped or address)


def parse_proc_net_tcp(text: str, ipv6: bool) -> list[Listener]:
    """Listening sockets (state 0A) in the text of ``/proc/net/tcp`` (or ``tcp6``), in file order.

    Malformed lines are skipped.
    """
    listeners = []
    for line in text.splitlines()[1:]:  # first line: column titles
        fields = line.split()
        if len(fields) < 10 or fields[3] != _LISTEN:
            continue
        try:
            hex_addr, hex_port = fields[1].split(":")
            listeners.append(Listener(_decode_addr(hex_addr, ipv6), int(hex_port, 16), int(fields[9])))
        except ValueError:
            continue
    return listeners


def read_listeners(root: str = "/") -> list[Listener]:
    """IPv4 then IPv6 listeners of this network namespace; [] when unreadable."""
    listeners = []
    for name, ipv6 in (("tcp", False), ("tcp6", True)):
        try:
            with open(os.path.join(root, "proc", "net", name), encoding="ascii", errors="replace") as handle:
                listeners.extend(parse_proc_net_tcp(handle.read(), ipv6))
        except OSError:
            continue
    return listeners


# ---------------------------------------------------------------------------
# Socket inode -> process
# ---------------------------------------------------------------------------


def parse_cgroup_unit(text: str) -> str:
    """The systemd service unit in a ``/proc/<pid>/cgroup`` text, "" if none.

    cgroup v2 has one line ``0::/system.slice/foo.service``; v1 (and hybrid
    setups) have one line per hierarchy, systemd's being ``N:name=systemd:/...``.
    Those two are preferred, in that order, then any other line. Within a
    path, the last component ending in ``.service`` wins, so a unit's own
    sub-cgroups (Delegate=yes) and user services
    (``user@0.service/app.slice/foo.service``) resolve to the right unit.
    """
    unified, named, others = [], [], []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            unified.append(path)
        elif controllers == "name=systemd":
            named.append(path)
        else:
            others.append(path)
    for path in unified + named + others:
        for component in reversed(path.strip().split("/")):
            if component.endswith(".service"):
                return component
    return ""


def parse_cgroup_container(text: str) -> str:
    """The Docker container ID in a ``/proc/<pid>/cgroup`` text, "" if none.

    cgroupfs driver: ``.../docker/<id>``; systemd driver: ``.../docker-<id>.scope``.
    """
    for line in text.splitlines():
        path = line.split(":", 2)[-1].strip()
        match = _CONTAINER_ID.search(path)
        if match:
            return match.group(1)
    return ""


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _pids(root: str) -> list[int]:
    try:
        return sorted(int(name) for name in os.listdir(os.path.join(root, "proc")) if name.isdigit())
    except OSError:
        return []


def socket_owners(inodes: set[int], root: str = "/") -> dict[int, Owner]:
    """For each socket inode, the process holding it (the lowest pid when several share it).

    Scans ``<root>/proc/<pid>/fd``; processes we may not inspect are skipped,
    so an inode can be missing from the answer.
    """
    found: dict[int, Owner] = {}
    wanted = set(inodes)
    for pid in _pids(root):
        if not wanted:
            break
        proc_dir = os.path.join(root, "proc", str(pid))
        try:
            fds = os.listdir(os.path.join(proc_dir, "fd"))
        except OSError:
            continue
        held = set()
        for fd in fds:
            try:
                match = _SOCKET_LINK.match(os.readlink(os.path.join(proc_dir, "fd", fd)))
            except OSError:
                continue
            if match and int(match.group(1)) in wanted:
                held.add(int(match.group(1)))
        if not held:
            continue
        cgroup = _read_text(os.path.join(proc_dir, "cgroup"))
        owner = Owner(
            pid=pid,
            comm=_read_text(os.path.join(proc_dir, "comm")).strip(),
            unit=parse_cgroup_unit(cgroup),
            container=parse_cgroup_container(cgroup),
        )
        for inode in held:
            found[inode] = owner
        wanted -= held
    return found


# ---------------------------------------------------------------------------
# Conflicts
# ---------------------------------------------------------------------------

def _as_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip().strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _host_addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address] | None:
    """The addresses a bind to ``host`` would use; None = any address (empty or unresolvable host)."""
    host = host.strip().strip("[]")
    if not host:
        return None
    address = _as_ip(host)
    if address is not None:
        return [address]
    try:  # a name: the engine resolves it the same way (normally /etc/hosts)
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    addresses = [a for a in (_as_ip(str(info[4][0])) for info in infos) if a is not None]
    return addresses or None


def _conflicts(
    listening: ipaddress.IPv4Address | ipaddress.IPv6Address, wanted: ipaddress.IPv4Address | ipaddress.IPv6Address
) -> bool:
    # Linux bind rules, without SO_REUSEPORT: same address; a wildcard covers
    # its family; "::" is dual-stack by default (bindv6only=0) and we cannot
    # see IPV6_V6ONLY, so it is taken to cover IPv4 as well, both ways.
    if listening == wanted:
        return True
    if listening.version == 6 and listening.is_unspecified:
        return True
    if wanted.version == 6 and wanted.is_unspecified:
        return True
    if listening.version != wanted.version:
        return False
    return listening.is_unspecified or wanted.is_unspecified


def port_owners(port: int, host: str = "", root: str = "/") -> list[Owner]:
    """Every process listening on ``port`` where a bind to ``host`` would collide, in listener order.

    ``host`` "" means any address. A listener whose process we cannot see
    appears as ``Owner(pid=0)``.
    """
    wanted = _host_addresses(host)
    clashing = []
    for listener in read_listeners(root):
        if listener.port != port:
            continue
        address = _as_ip(listener.addr)
        if address is None:
            continue
        if wanted is None or any(_conflicts(address, w) for w in wanted):
            clashing.append(listener)
    if not clashing:
        return []
    owners = socket_owners({listener.inode for listener in clashing}, root)
    result: list[Owner] = []
    for listener in clashing:
        owner = owners.get(listener.inode, Owner(pid=0))
        if owner not in result:
            result.append(owner)
    return result


def port_owner(port: int, host: str = "", root: str = "/") -> Owner | None:
    """The first process listening on ``port`` in a way that collides with ``host``; None when free or unreadable."""
    owners = port_owners(port, host, root)
    return owners[0] if owners else None


def _unit_name(unit: str) -> str:
    unit = unit.strip()
    return unit if not unit or "." in unit else unit + ".service"


def describe_owner(owner: Owner) -> str:
    if owner.pid <= 0:
        return "a process this user cannot see (run the check as root to name it)"
    detail = owner.comm or "?"
    if owner.container:
        detail += f", container {owner.container[:12]}"
    elif owner.unit:
        detail += f", unit {owner.unit}"
    return f"pid {owner.pid} ({detail})"


def port_conflict(port: int, host: str, own_unit: str, root: str = "/", own_container: str = "") -> str:
    """"" when ``port`` is free for ``host`` or held only by this instance; else a message naming the holder.

    ``own_unit`` is this instance's systemd unit (``llama-server-x.service``;
    the ``.service`` suffix may be omitted); "" means no unit is ours.
    ``own_container`` is the full ID of this instance's Docker container (compose runtime).
    """
    mine = _unit_name(own_unit)
    for owner in port_owners(port, host, root):
        if own_container and owner.container == own_container:
            continue
        if mine and owner.unit == mine:
            continue
        return f"port {port} is already in use by {describe_owner(owner)}"
    return ""
