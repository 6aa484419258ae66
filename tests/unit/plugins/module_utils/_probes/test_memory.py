"""RAM and container memory probes (spec section 4.5); fixtures described in fixtures/memory/README.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.memory import (
    cgroup_memory,
    combine_ram,
    parse_cgroup_bytes,
    parse_meminfo,
    ram_facts,
    read_meminfo,
    unit_memory_mib,
)
from tests.unit.support.paths import FIXTURES as CAPTURED

FIXTURES = CAPTURED / "memory"
THIS_HOST = FIXTURES / "this-host-v1"
V2_LIMITED = FIXTURES / "v2-container-limited"
V2_UNLIMITED = FIXTURES / "v2-container-unlimited"
V2_HOST_UNIT = FIXTURES / "v2-host-with-unit"
V2_HOST_UNIT_STAT = FIXTURES / "v2-host-with-unit-stat"
V1_LIMITED = FIXTURES / "v1-container-limited"
UNIT = "llama-server-main.service"

# The hand-written 64 GiB host meminfo shared by the v1/v2 trees.
HOST64_TOTAL = 65758960 // 1024
HOST64_AVAIL = HOST64_TOTAL - (65758960 - 58211632) // 1024


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def expected_from_meminfo(text: str) -> tuple[int, int]:
    fields = {line.split(":")[0]: int(line.split()[1]) for line in text.splitlines() if line.strip()}
    total_kib, avail_kib = fields["MemTotal"], fields["MemAvailable"]
    return total_kib // 1024, total_kib // 1024 - (total_kib - avail_kib) // 1024


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MemTotal: 2048 kB\nMemAvailable: 1024 kB\n", (2, 1)),
        # used = (T - A) // 1024 rounds down, so avail = total - used can exceed A // 1024.
        ("MemTotal: 10240 kB\nMemAvailable: 1025 kB\n", (10, 2)),
        ("MemTotal: 10240 kB\nMemAvailable: 1023 kB\n", (10, 1)),
        ("MemTotal:       24684084 kB\nMemFree: 1 kB\nMemAvailable:   23866660 kB\n", (24105, 23307)),
        ("MemAvailable: 100 kB\nMemTotal: 4096 kB\n", (4, 1)),  # order does not matter
        ("MemTotal: 4096 kB\n", (4, 0)),  # no MemAvailable (kernel < 3.14): free unknown
        ("MemTotal: 4096 kB\nMemAvailable: lots\n", (4, 0)),
        ("MemTotal: 1023 kB\nMemAvailable: 10 kB\n", (0, 0)),  # under 1 MiB is 0 MiB
        ("MemTotal: 0 kB\nMemAvailable: 0 kB\n", (0, 0)),
        ("MemTotal: x kB\nMemAvailable: 1 kB\n", (0, 0)),
        ("MemTotal:\nMemAvailable: 1 kB\n", (0, 0)),
        ("MemTotal: -5 kB\n", (0, 0)),
        ("MemAvailable: 1024 kB\n", (0, 0)),
        ("", (0, 0)),
        ("garbage without colon\n", (0, 0)),
        ("MemTotal: 2048 kB\nMemTotal: 9999 kB\nMemAvailable: 1024 kB\n", (2, 1)),  # first line wins
    ],
)
def test_parse_meminfo(text: str, expected: tuple[int, int]) -> None:
    assert parse_meminfo(text) == expected


def test_read_meminfo_real_capture() -> None:
    text = (THIS_HOST / "proc" / "meminfo").read_text()
    total, avail = read_meminfo(str(THIS_HOST))
    assert (total, avail) == expected_from_meminfo(text)
    assert total == 24105  # 24 GiB machine
    assert 0 < avail <= total


def test_read_meminfo_old_kernel(tmp_path: Path) -> None:
    write(tmp_path, "proc/meminfo", (FIXTURES / "meminfo" / "kernel-3.10-no-memavailable.txt").read_text())
    assert read_meminfo(str(tmp_path)) == (8010196 // 1024, 0)


def test_read_meminfo_missing(tmp_path: Path) -> None:
    assert read_meminfo(str(tmp_path)) == (0, 0)


def test_read_meminfo_unreadable_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "proc" / "meminfo").mkdir(parents=True)  # a directory: open() fails
    assert read_meminfo(str(tmp_path)) == (0, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("17179869184\n", 16384),
        ("1048576", 1),
        ("1048575", 0),  # under one MiB
        (" 5368709120 \n", 5120),
        ("max\n", 0),
        ("0", 0),
        ("-1", 0),
        ("9223372036854771712\n", 0),  # cgroup v1 "no limit"
        (str(1 << 60), 0),
        (str((1 << 60) - 1), ((1 << 60) - 1) >> 20),
        ("99999999999999999999999", 0),
        ("", 0),
        ("12 MiB", 0),
        ("1e9", 0),
        (None, 0),
    ],
)
def test_parse_cgroup_bytes(text: str | None, expected: int) -> None:
    assert parse_cgroup_bytes(text) == expected


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        (THIS_HOST, (0, 0)),  # real v1 capture: no limit
        (V2_LIMITED, (16384, 5120)),
        (V2_UNLIMITED, (0, 0)),
        (V1_LIMITED, (8192, 1024)),
        (V2_HOST_UNIT, (0, 0)),  # root cgroup of a host has no memory.max
    ],
    ids=["real-v1-unlimited", "v2-limited", "v2-max", "v1-limited", "v2-host"],
)
def test_cgroup_memory_fixtures(root: Path, expected: tuple[int, int]) -> None:
    assert cgroup_memory(str(root)) == expected


def test_cgroup_memory_empty_root(tmp_path: Path) -> None:
    assert cgroup_memory(str(tmp_path)) == (0, 0)


def test_cgroup_v2_limit_without_current(tmp_path: Path) -> None:
    write(tmp_path, "sys/fs/cgroup/memory.max", "4294967296\n")
    assert cgroup_memory(str(tmp_path)) == (4096, 0)


def test_cgroup_v2_max_falls_back_to_v1(tmp_path: Path) -> None:
    # v2 says no limit: the v1 files are still asked (seed behaviour).
    write(tmp_path, "sys/fs/cgroup/memory.max", "max\n")
    write(tmp_path, "sys/fs/cgroup/memory.current", "1048576\n")
    write(tmp_path, "sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n")
    write(tmp_path, "sys/fs/cgroup/memory/memory.usage_in_bytes", "garbage\n")
    assert cgroup_memory(str(tmp_path)) == (2048, 0)


def test_cgroup_v2_wins_over_v1(tmp_path: Path) -> None:
    write(tmp_path, "sys/fs/cgroup/memory.max", "1073741824\n")
    write(tmp_path, "sys/fs/cgroup/memory.current", "536870912\n")
    write(tmp_path, "sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n")
    assert cgroup_memory(str(tmp_path)) == (1024, 512)


@pytest.mark.parametrize(
    ("host", "cgroup", "expected"),
    [
        ((65536, 50000), (0, 0), (65536, 50000)),  # no limit: host figures
        ((65536, 50000), (0, 999), (65536, 50000)),
        ((65536, 50000), (16384, 5120), (16384, 11264)),  # limit smaller, free smaller
        ((8192, 1000), (16384, 5120), (8192, 1000)),  # limit above the host: host wins
        ((8192, 6000), (16384, 11000), (8192, 5384)),  # limit above host, but cgroup free is smaller
        ((0, 0), (16384, 5120), (16384, 11264)),  # host unknown: the limit stands in
        ((65536, 0), (16384, 5120), (16384, 11264)),  # host free unknown
        ((65536, 50000), (16384, 17000), (16384, 50000)),  # over the limit (free < 0): free untouched
        ((65536, 50000), (16384, 16384), (16384, 0)),  # exactly at the limit: nothing free
        ((65536, 0), (16384, 16384), (16384, 0)),
    ],
)
def test_combine_ram(host: tuple[int, int], cgroup: tuple[int, int], expected: tuple[int, int]) -> None:
    assert combine_ram(*host, *cgroup) == expected


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        (V2_LIMITED, (16384, 16384 - 5120)),
        (V2_UNLIMITED, (HOST64_TOTAL, HOST64_AVAIL)),
        (V1_LIMITED, (8192, 8192 - 1024)),
        (V2_HOST_UNIT, (HOST64_TOTAL, HOST64_AVAIL)),
    ],
    ids=["v2-limited", "v2-max", "v1-limited", "v2-host"],
)
def test_ram_facts_fixtures(root: Path, expected: tuple[int, int]) -> None:
    assert ram_facts(str(root)) == expected


def test_ram_facts_real_capture() -> None:
    # Real machine: v1 "no limit", so the host figures stand.
    assert ram_facts(str(THIS_HOST)) == read_meminfo(str(THIS_HOST))


def test_ram_facts_cgroup_only(tmp_path: Path) -> None:
    write(tmp_path, "sys/fs/cgroup/memory.max", "2147483648\n")
    write(tmp_path, "sys/fs/cgroup/memory.current", "1073741824\n")
    assert ram_facts(str(tmp_path)) == (2048, 1024)


def test_ram_facts_nothing(tmp_path: Path) -> None:
    assert ram_facts(str(tmp_path)) == (0, 0)


@pytest.mark.parametrize(
    ("root", "unit", "expected"),
    [
        (V2_HOST_UNIT, UNIT, 9216),
        (V2_HOST_UNIT_STAT, UNIT, 2048),  # anon only: the model's page cache is already "available"
        (V1_LIMITED, UNIT, 3072),
        (V2_HOST_UNIT, "llama-server-other.service", 0),
        (THIS_HOST, UNIT, 0),
        (V2_HOST_UNIT, "", 0),
        (V2_HOST_UNIT, "../system.slice/" + UNIT, 0),  # never walks out of the slice
        (V2_HOST_UNIT, "..", 0),
        (V2_HOST_UNIT, ".", 0),
        (V2_HOST_UNIT, "a\0b", 0),
    ],
)
def test_unit_memory_mib(root: Path, unit: str, expected: int) -> None:
    assert unit_memory_mib(unit, str(root)) == expected


def test_unit_memory_v2_wins_over_v1(tmp_path: Path) -> None:
    write(tmp_path, f"sys/fs/cgroup/system.slice/{UNIT}/memory.current", "2097152\n")
    write(tmp_path, f"sys/fs/cgroup/memory/system.slice/{UNIT}/memory.usage_in_bytes", "4194304\n")
    assert unit_memory_mib(UNIT, str(tmp_path)) == 2


def test_unit_memory_v1_stat_uses_total_rss(tmp_path: Path) -> None:
    write(tmp_path, f"sys/fs/cgroup/memory/system.slice/{UNIT}/memory.stat", "cache 999999999\ntotal_rss 8388608\n")
    write(tmp_path, f"sys/fs/cgroup/memory/system.slice/{UNIT}/memory.usage_in_bytes", "1008388607\n")
    assert unit_memory_mib(UNIT, str(tmp_path)) == 8


def test_unit_memory_stat_without_the_key_is_zero(tmp_path: Path) -> None:
    write(tmp_path, f"sys/fs/cgroup/system.slice/{UNIT}/memory.stat", "file 4096\nanon x\n")
    assert unit_memory_mib(UNIT, str(tmp_path)) == 0


def test_unit_memory_garbage_is_zero(tmp_path: Path) -> None:
    write(tmp_path, f"sys/fs/cgroup/system.slice/{UNIT}/memory.current", "lots\n")
    assert unit_memory_mib(UNIT, str(tmp_path)) == 0
