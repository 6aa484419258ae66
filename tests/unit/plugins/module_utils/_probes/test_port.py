"""Port owner probe: /proc/net/tcp parsing, socket owners, bind conflicts, a live socket."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.port import (
    Listener,
    Owner,
    parse_cgroup_unit,
    parse_proc_net_tcp,
    port_conflict,
    port_owner,
    port_owners,
    read_listeners,
    socket_owners,
)
from tests.unit.support.paths import FIXTURES as CAPTURED

FIXTURES = CAPTURED / "port"
TCP = (FIXTURES / "proc_net_tcp.txt").read_text()
TCP6 = (FIXTURES / "proc_net_tcp6.txt").read_text()

# Inodes of the listeners in the captured files (see fixtures/port/README.md).
INODE_V4_LOOPBACK = 79373  # 127.0.0.1:38081
INODE_V4_ANY = 79380  # 0.0.0.0:38084
INODE_V6_LOOPBACK = 79376  # ::1:38082
INODE_V6_ANY = 79383  # :::38083


def test_parse_captured_tcp():
    assert parse_proc_net_tcp(TCP, ipv6=False) == [
        Listener("127.0.0.1", 38081, INODE_V4_LOOPBACK),
        Listener("0.0.0.0", 2024, 635),
        Listener("0.0.0.0", 38084, INODE_V4_ANY),
    ]


def test_parse_captured_tcp6():
    assert parse_proc_net_tcp(TCP6, ipv6=True) == [
        Listener("::1", 38082, INODE_V6_LOOPBACK),
        Listener("::", 38083, INODE_V6_ANY),
    ]


HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
LINE = (
    "   0: {addr}:{port} 00000000:0000 {st} 00000000:00000000 00:00000000 00000000     0        0 {inode} 1 0 100 0\n"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("", []),
        (LINE.format(addr="0100007F", port="1F90", st="0A", inode=5), [Listener("127.0.0.1", 8080, 5)]),
        (LINE.format(addr="0100007F", port="1F90", st="01", inode=5), []),  # established
        (LINE.format(addr="0101A8C0", port="0050", st="0A", inode=7), [Listener("192.168.1.1", 80, 7)]),
        (LINE.format(addr="0100007G", port="1F90", st="0A", inode=5), []),  # bad hex
        (LINE.format(addr="01007F", port="1F90", st="0A", inode=5), []),  # bad length
        (LINE.format(addr="0100007F", port="1F90", st="0A", inode="x"), []),
        ("   0: 0100007F:1F90 00000000:0000 0A\n", []),  # truncated line
        ("garbage\n", []),
    ],
)
def test_parse_proc_net_tcp_lines(body, expected):
    assert parse_proc_net_tcp(HEADER + body, ipv6=False) == expected


def test_parse_proc_net_tcp_skips_the_header_only():
    line = LINE.format(addr="0100007F", port="1F90", st="0A", inode=5)
    assert parse_proc_net_tcp(line, ipv6=False) == []  # the first line is always titles
    assert parse_proc_net_tcp(HEADER + line + line, ipv6=False) == [Listener("127.0.0.1", 8080, 5)] * 2


def test_parse_ipv4_mapped_listener_is_shown_as_ipv4():
    line = LINE.format(addr="0000000000000000FFFF00000100007F", port="1F90", st="0A", inode=9)
    assert parse_proc_net_tcp(HEADER + line, ipv6=True) == [Listener("127.0.0.1", 8080, 9)]


def test_ipv4_address_in_an_ipv6_table_is_rejected():
    line = LINE.format(addr="0100007F", port="1F90", st="0A", inode=9)
    assert parse_proc_net_tcp(HEADER + line, ipv6=True) == []


# ---------------------------------------------------------------------------
# cgroup -> unit
# ---------------------------------------------------------------------------

# Real capture of /proc/self/cgroup on the development machine (hybrid v1 + v2, no systemd).
CGROUP_THIS_MACHINE = """\
9:name=systemd:/
8:pids:/
7:blkio:/
6:freezer:/
5:devices:/
4:memory:/process_api/9f0f097be7c599646313336017c4113c
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
"""


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("0::/system.slice/llama-server-a.service\n", "llama-server-a.service"),
        ("0::/system.slice/llama-server@b.service\n", "llama-server@b.service"),
        # Delegate=yes sub-cgroups and user services.
        ("0::/system.slice/foo.service/payload\n", "foo.service"),
        ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/bar.service\n", "bar.service"),
        ("0::/user.slice/user-1000.slice/user@1000.service/init.scope\n", "user@1000.service"),
        ("0::/system.slice/docker-0123abcd.scope\n", ""),
        ("0::/user.slice/user-0.slice/session-3.scope\n", ""),
        ("0::/\n", ""),
        ("", ""),
        ("not a cgroup file", ""),
        (CGROUP_THIS_MACHINE, ""),
        # cgroup v1 (systemd's named hierarchy).
        (
            "11:memory:/system.slice/old.service\n10:cpu,cpuacct:/system.slice/old.service\n"
            "1:name=systemd:/system.slice/old.service\n",
            "old.service",
        ),
        # Hybrid: the unified line first, then name=systemd, then any other.
        ("1:name=systemd:/system.slice/v1.service\n0::/system.slice/v2.service\n", "v2.service"),
        ("1:name=systemd:/system.slice/v1.service\n0::/\n", "v1.service"),
        ("4:memory:/system.slice/mem.service\n1:name=systemd:/\n0::/\n", "mem.service"),
    ],
)
def test_parse_cgroup_unit(text, unit):
    assert parse_cgroup_unit(text) == unit


# ---------------------------------------------------------------------------
# Fake /proc trees
# ---------------------------------------------------------------------------


def fake_proc(root: Path, processes: dict[int, dict], tcp: str = TCP, tcp6: str = TCP6) -> str:
    """<root>/proc with the captured socket tables and processes {pid: {comm, cgroup, sockets, fd_dir}}."""
    net = root / "proc" / "net"
    net.mkdir(parents=True)
    (net / "tcp").write_text(tcp)
    (net / "tcp6").write_text(tcp6)
    (root / "proc" / "self").mkdir()  # non-numeric entries are ignored
    for pid, spec in processes.items():
        proc_dir = root / "proc" / str(pid)
        proc_dir.mkdir()
        (proc_dir / "comm").write_text(spec.get("comm", "x") + "\n")
        (proc_dir / "cgroup").write_text(spec.get("cgroup", "0::/\n"))
        if spec.get("fd_dir", True):
            fd_dir = proc_dir / "fd"
            fd_dir.mkdir()
            (fd_dir / "0").symlink_to("/dev/null")
            (fd_dir / "1").symlink_to("pipe:[1234]")
            for n, inode in enumerate(spec.get("sockets", ()), start=3):
                (fd_dir / str(n)).symlink_to(f"socket:[{inode}]")
    return str(root)


SERVICE = {"comm": "llama-server", "cgroup": "0::/system.slice/llama-server-main.service\n"}


@pytest.fixture
def host(tmp_path):
    return fake_proc(
        tmp_path,
        {
            300: {**SERVICE, "sockets": [INODE_V4_LOOPBACK]},
            # Pre-fork style: a worker shares the listener; the lowest pid is reported.
            301: {**SERVICE, "sockets": [INODE_V4_LOOPBACK]},
            400: {"comm": "nginx", "cgroup": "0::/system.slice/nginx.service\n", "sockets": [INODE_V4_ANY]},
            500: {"comm": "python3", "cgroup": "0::/user.slice/user-0.slice/session-1.scope\n",
                  "sockets": [INODE_V6_LOOPBACK, 999]},
            # 600 holds :: but we may not read its fds (another user).
            600: {"comm": "sshd", "fd_dir": False},
            42: {"comm": "early", "sockets": []},
        },
    )


def test_read_listeners_reads_both_tables(host):
    assert [listener.port for listener in read_listeners(host)] == [38081, 2024, 38084, 38082, 38083]


def test_read_listeners_unreadable(tmp_path):
    assert read_listeners(str(tmp_path)) == []


def test_socket_owners(host):
    assert socket_owners({INODE_V4_LOOPBACK, INODE_V4_ANY, INODE_V6_LOOPBACK, INODE_V6_ANY}, host) == {
        INODE_V4_LOOPBACK: Owner(300, "llama-server", "llama-server-main.service"),
        INODE_V4_ANY: Owner(400, "nginx", "nginx.service"),
        INODE_V6_LOOPBACK: Owner(500, "python3", ""),
    }
    assert socket_owners(set(), host) == {}
    assert socket_owners({1}, str(Path(host) / "absent")) == {}


LLAMA = Owner(300, "llama-server", "llama-server-main.service")
NGINX = Owner(400, "nginx", "nginx.service")
PYTHON = Owner(500, "python3", "")
HIDDEN = Owner(0)


@pytest.mark.parametrize(
    ("port", "host_arg", "owner"),
    [
        # 127.0.0.1:38081
        (38081, "", LLAMA),
        (38081, "127.0.0.1", LLAMA),
        (38081, "0.0.0.0", LLAMA),
        (38081, "::", LLAMA),
        (38081, "[::]", LLAMA),
        (38081, "::ffff:127.0.0.1", LLAMA),
        (38081, "10.0.0.5", None),
        (38081, "127.0.0.2", None),
        (38081, "::1", None),
        (38081, "localhost", LLAMA),
        # 0.0.0.0:38084 covers every IPv4 address, not IPv6 ones.
        (38084, "127.0.0.1", NGINX),
        (38084, "10.1.2.3", NGINX),
        (38084, "0.0.0.0", NGINX),
        (38084, "::", NGINX),
        (38084, "::1", None),
        # ::1:38082
        (38082, "::1", PYTHON),
        (38082, "[::1]", PYTHON),
        (38082, "", PYTHON),
        (38082, "::", PYTHON),
        (38082, "127.0.0.1", None),
        (38082, "0.0.0.0", None),
        # :::38083 is dual-stack: everything collides; its process is not visible.
        (38083, "127.0.0.1", HIDDEN),
        (38083, "::1", HIDDEN),
        (38083, "192.168.0.9", HIDDEN),
        # Free ports.
        (38085, "", None),
        (8080, "0.0.0.0", None),
    ],
)
def test_port_owner(host, port, host_arg, owner):
    assert port_owner(port, host_arg, root=host) == owner


def test_port_owners_lists_every_holder(tmp_path):
    # 127.0.0.1:38081 and 0.0.0.0:38084 moved to the same port (SO_REUSEPORT-style coexistence).
    tcp = TCP.replace(":94C4 ", ":94C1 ")
    root = fake_proc(
        tmp_path,
        {300: {**SERVICE, "sockets": [INODE_V4_LOOPBACK]}, 400: {"comm": "nginx", "sockets": [INODE_V4_ANY]}},
        tcp=tcp,
    )
    assert port_owners(38081, "127.0.0.1", root) == [LLAMA, Owner(400, "nginx", "")]
    assert port_conflict(38081, "127.0.0.1", "llama-server-main.service", root) == (
        "port 38081 is already in use by pid 400 (nginx)"
    )


def test_port_owner_unreadable_root(tmp_path):
    assert port_owner(38081, "", root=str(tmp_path)) is None


@pytest.mark.parametrize(
    ("port", "host_arg", "own_unit", "message"),
    [
        (38081, "127.0.0.1", "llama-server-main.service", ""),
        (38081, "127.0.0.1", "llama-server-main", ""),  # suffix optional
        (38081, "0.0.0.0", "llama-server-main.service", ""),
        (
            38081,
            "127.0.0.1",
            "llama-server-other.service",
            "port 38081 is already in use by pid 300 (llama-server, unit llama-server-main.service)",
        ),
        (
            38081,
            "127.0.0.1",
            "",
            "port 38081 is already in use by pid 300 (llama-server, unit llama-server-main.service)",
        ),
        (
            38084,
            "127.0.0.1",
            "llama-server-main.service",
            "port 38084 is already in use by pid 400 (nginx, unit nginx.service)",
        ),
        (38082, "::1", "llama-server-main.service", "port 38082 is already in use by pid 500 (python3)"),
        (
            38083,
            "127.0.0.1",
            "llama-server-main.service",
            "port 38083 is already in use by a process this user cannot see (run the check as root to name it)",
        ),
        (38085, "0.0.0.0", "", ""),
        (38081, "10.0.0.5", "", ""),
    ],
)
def test_port_conflict(host, port, host_arg, own_unit, message):
    assert port_conflict(port, host_arg, own_unit, root=host) == message


# ---------------------------------------------------------------------------
# Live: a socket this test process holds
# ---------------------------------------------------------------------------


@pytest.fixture
def live_listener():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def own_comm() -> str:
    return Path("/proc/self/comm").read_text().strip()


def test_live_port_owner_is_this_process(live_listener):
    owner = port_owner(live_listener, "127.0.0.1")
    assert owner is not None
    assert owner.pid == os.getpid()
    assert owner.comm == own_comm()
    assert owner.unit == parse_cgroup_unit(Path("/proc/self/cgroup").read_text())
    assert port_owner(live_listener, "0.0.0.0") == owner
    assert port_owner(live_listener, "127.0.0.9") is None


def test_live_port_conflict(live_listener):
    unit = parse_cgroup_unit(Path("/proc/self/cgroup").read_text())
    if unit:  # running inside a systemd service: our own unit is not a conflict
        assert port_conflict(live_listener, "127.0.0.1", unit) == ""
    message = port_conflict(live_listener, "127.0.0.1", "some-other.service")
    assert message.startswith(f"port {live_listener} is already in use by pid {os.getpid()} ({own_comm()}")


def test_live_port_conflict_own_unit(live_listener, tmp_path):
    # The kernel's live socket table and this process's real fds, seen through a
    # root where only the cgroup file says we run as llama-server-live.service.
    proc = tmp_path / "proc"
    mine = proc / str(os.getpid())
    mine.mkdir(parents=True)
    (proc / "net").symlink_to("/proc/net")
    (mine / "fd").symlink_to(f"/proc/{os.getpid()}/fd")
    (mine / "comm").symlink_to(f"/proc/{os.getpid()}/comm")
    (mine / "cgroup").write_text("0::/system.slice/llama-server-live.service\n")
    root = str(tmp_path)
    assert port_owner(live_listener, "127.0.0.1", root) == Owner(os.getpid(), own_comm(), "llama-server-live.service")
    assert port_conflict(live_listener, "127.0.0.1", "llama-server-live.service", root) == ""
    assert port_conflict(live_listener, "", "llama-server-live", root) == ""
    assert port_conflict(live_listener, "127.0.0.1", "other.service", root) == (
        f"port {live_listener} is already in use by pid {os.getpid()} ({own_comm()}, unit llama-server-live.service)"
    )


def test_live_port_free_after_close():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    sock.close()
    assert port_owner(port, "127.0.0.1") is None
    assert port_conflict(port, "127.0.0.1", "") == ""


# ---------------------------------------------------------------------------
# Compose runtime: the instance's own container holds its port
# ---------------------------------------------------------------------------

OWN_CONTAINER = "a1" * 32
OTHER_CONTAINER = "b2" * 32


@pytest.mark.parametrize(
    ("cgroup", "own_container", "message"),
    [
        (f"9:memory:/docker/{OWN_CONTAINER}\n1:name=systemd:/docker/{OWN_CONTAINER}\n", OWN_CONTAINER, ""),
        (f"0::/system.slice/docker-{OWN_CONTAINER}.scope\n", OWN_CONTAINER, ""),
        (
            f"0::/system.slice/docker-{OTHER_CONTAINER}.scope\n",
            OWN_CONTAINER,
            f"port 38081 is already in use by pid 300 (llama-server, container {OTHER_CONTAINER[:12]})",
        ),
        (
            f"0::/docker/{OWN_CONTAINER}\n",
            "",
            f"port 38081 is already in use by pid 300 (llama-server, container {OWN_CONTAINER[:12]})",
        ),
    ],
)
def test_port_conflict_with_containers(tmp_path, cgroup, own_container, message):
    root = fake_proc(tmp_path, {300: {"comm": "llama-server", "cgroup": cgroup, "sockets": [INODE_V4_LOOPBACK]}})
    assert port_conflict(38081, "127.0.0.1", "", root=root, own_container=own_container) == message
