"""Container CPU budget probe (spec section 7.2); fixtures described in fixtures/cpu/README.md."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import CpuBudget
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.cpu import (
    allowed_cpus,
    cpu_quota,
    cpuset_threads,
    parse_cpu_list,
    parse_cpu_max,
    physical_cores,
    quota_cpus,
)
from tests.unit.support.paths import FIXTURES as CAPTURED

FIXTURES = CAPTURED / "cpu"
THIS_HOST = FIXTURES / "this-host"
SMT = FIXTURES / "smt-4c8t"
SMT_QUOTA = FIXTURES / "smt-4c8t-quota-v2"
HYBRID = FIXTURES / "hybrid-8p8e"
CPUSET = FIXTURES / "cpuset-2-cores-v2"
QUOTA_V1 = FIXTURES / "quota-v1-cpu-cpuacct"

STATUS = "proc/self/status"
CPU_MAX = "sys/fs/cgroup/cpu.max"
ONLINE = "sys/devices/system/cpu/online"
ATOM = "sys/devices/cpu_atom/cpus"
E_CORES = " (E-cores excluded)"


def cpuset_why(n: int, host: int, suffix: str = "") -> str:
    return f"container cpuset, {n} physical cores allowed out of {host}{suffix}"


def status_text(allowed: str) -> str:
    return f"Name:\tllama-server\nCpus_allowed:\tffffff\nCpus_allowed_list:\t{allowed}\nMems_allowed_list:\t0\n"


def variant(base: Path | None, tmp_path: Path, files: dict[str, str | None]) -> str:
    """Copy a fixture tree and replace (text) or delete (None) some of its files."""
    root = tmp_path / "root"
    if base is not None:
        shutil.copytree(base, root)
    else:
        root.mkdir()
    for relative, text in files.items():
        path = root / relative
        if text is None:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


# --- CPU list syntax -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0-3,8-11\n", [0, 1, 2, 3, 8, 9, 10, 11]),
        ("0", [0]),
        ("0-0", [0]),
        ("", []),
        ("\n", []),
        (",, ,", []),
        (" 2 , 0 ", [0, 2]),
        ("3,1,1,2-3", [1, 2, 3]),  # sorted, unique
        ("8-9,0-1", [0, 1, 8, 9]),
        ("+2", [2]),  # Go's Atoi accepts a plus sign
        ("0 - 2", [0, 1, 2]),
    ],
)
def test_parse_cpu_list(text: str, expected: list[int]) -> None:
    assert parse_cpu_list(text) == expected


def test_parse_cpu_list_widest_range() -> None:
    assert len(parse_cpu_list("0-65536")) == 65537
    assert parse_cpu_list("100-65636")[-1] == 65636


@pytest.mark.parametrize(
    "text",
    [
        "a",
        "0x3",
        "1.5",
        "1,b",
        "-1",  # negative
        "1--2",  # negative end
        "5-3",  # reversed
        "0-65537",  # wider than 65536
        "1-",
        "-",
        "1-2-3",
        "١",  # a non-ASCII digit is not an integer here
        "1_0",
    ],
)
def test_parse_cpu_list_errors(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the spec only says "error"
        parse_cpu_list(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (status_text("0-1,8-9"), [0, 1, 8, 9]),
        ("Name:\tx\nCpus_allowed:\t3\n", None),  # no list line
        (status_text("0-x"), None),
        ("", None),
        ("Cpus_allowed_list_extra:\t0-3\n", None),  # the key must match exactly
    ],
)
def test_allowed_cpus(text: str, expected: list[int] | None) -> None:
    assert allowed_cpus(text) == expected


def test_allowed_cpus_real_capture() -> None:
    assert allowed_cpus((THIS_HOST / STATUS).read_text()) == [0, 1]


# --- CPU quota -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quota", "period", "expected"),
    [
        (150000, 100000, 2),
        (100000, 100000, 1),
        (100001, 100000, 2),
        (50000, 100000, 1),  # at least one
        (1, 100000, 1),
        (400000, 100000, 4),
        (-1, 100000, 0),  # v1 "unlimited"
        (0, 100000, 0),
        (100000, 0, 0),
        (100000, -5, 0),
        (None, 100000, 0),
        (100000, None, 0),
    ],
)
def test_quota_cpus(quota: int | None, period: int | None, expected: int) -> None:
    assert quota_cpus(quota, period) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("150000 100000\n", 2),
        ("max 100000\n", 0),
        ("max\n", 0),
        ("", 0),
        ("\n", 0),
        ("250000\n", 3),  # period missing: 100000
        ("50000 50000", 1),
        ("0 100000", 0),
        ("-5 100000", 0),
        ("abc 100000", 0),
        ("100000 abc", 0),
        ("100000 0", 0),
    ],
)
def test_parse_cpu_max(text: str, expected: int) -> None:
    assert parse_cpu_max(text) == expected


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, 0),
        ({CPU_MAX: "150000 100000\n"}, 2),
        ({CPU_MAX: "max 100000\n"}, 0),
        ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "400000\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 4),
        ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 0),
        ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "50000\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 1),
        ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "400000\n"}, 0),  # period unreadable: invalid
        ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "x\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 0),
        ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "400000\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "0\n"}, 0),
        (
            {
                "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "300000\n",
                "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            },
            3,
        ),
        # cpu/ is read before cpu,cpuacct/
        (
            {
                "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "200000\n",
                "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
                "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "800000\n",
                "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            },
            2,
        ),
        # a v2 cpu.max, even "max", means the v1 files are not asked
        (
            {
                CPU_MAX: "max 100000\n",
                "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "400000\n",
                "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
            },
            0,
        ),
    ],
    ids=[
        "none",
        "v2",
        "v2-max",
        "v1-cpu",
        "v1-unlimited",
        "v1-half",
        "v1-no-period",
        "v1-garbage",
        "v1-zero-period",
        "v1-cpu-cpuacct",
        "v1-cpu-first",
        "v2-first",
    ],
)
def test_cpu_quota(tmp_path: Path, files: dict[str, str], expected: int) -> None:
    assert cpu_quota(variant(None, tmp_path, files)) == expected


@pytest.mark.parametrize(
    ("root", "expected"),
    [(THIS_HOST, 0), (SMT, 0), (SMT_QUOTA, 2), (CPUSET, 0), (QUOTA_V1, 3)],
    ids=["real-v1-unlimited", "none", "v2-quota", "v2-max", "v1-cpu-cpuacct"],
)
def test_cpu_quota_fixtures(root: Path, expected: int) -> None:
    assert cpu_quota(str(root)) == expected


# --- physical cores --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("root", "cpus", "exclude", "expected"),
    [
        (THIS_HOST, [0, 1], frozenset(), 2),
        (SMT, list(range(8)), frozenset(), 4),
        (SMT, [0, 4], frozenset(), 1),
        (SMT, [0, 1, 2, 3], frozenset(), 4),
        (HYBRID, list(range(24)), frozenset(), 16),
        (HYBRID, list(range(24)), frozenset(range(16, 24)), 8),
        (HYBRID, list(range(16, 24)), frozenset(range(16, 24)), 0),
        (CPUSET, [0, 1, 8, 9], frozenset(), 2),
    ],
)
def test_physical_cores(root: Path, cpus: list[int], exclude: frozenset[int], expected: int) -> None:
    assert physical_cores(str(root), cpus, exclude) == expected


# --- the budget ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        (THIS_HOST, None),
        (SMT, None),
        (SMT_QUOTA, CpuBudget(n=2, engine=4, why="cgroup quota of 2 CPU")),
        (HYBRID, None),
        (CPUSET, CpuBudget(n=2, engine=8, why=cpuset_why(2, 8))),
    ],
    ids=["real-host", "smt-free", "smt-quota", "hybrid-free", "cpuset-2-cores"],
)
def test_cpuset_threads_fixtures(root: Path, expected: CpuBudget | None) -> None:
    assert cpuset_threads(str(root)) == expected


@pytest.mark.parametrize(
    ("base", "files", "expected"),
    [
        # Intel hybrid: llama.cpp alone starts one thread per P-core (8); cpusets compare with all 16 cores.
        (HYBRID, {CPU_MAX: "400000 100000\n"}, CpuBudget(4, 8, "cgroup quota of 4 CPU")),
        (HYBRID, {CPU_MAX: "800000 100000\n"}, None),  # quota = P-cores: nothing to gain
        (HYBRID, {CPU_MAX: "1200000 100000\n"}, None),
        (HYBRID, {STATUS: status_text("0-7")}, CpuBudget(4, 16, cpuset_why(4, 16, E_CORES))),
        (HYBRID, {STATUS: status_text("0-15")}, CpuBudget(8, 16, cpuset_why(8, 16, E_CORES))),
        (HYBRID, {STATUS: status_text("0-22")}, CpuBudget(8, 16, cpuset_why(8, 16, E_CORES))),
        # confined to E-cores only: counted after all (suffix kept, as the spec words it)
        (HYBRID, {STATUS: status_text("16-19")}, CpuBudget(4, 16, cpuset_why(4, 16, E_CORES))),
        (HYBRID, {STATUS: status_text("0-7"), CPU_MAX: "200000 100000\n"}, CpuBudget(2, 16, "cgroup quota of 2 CPU")),
        (
            HYBRID,
            {STATUS: status_text("0-7"), CPU_MAX: "400000 100000\n"},
            CpuBudget(4, 16, cpuset_why(4, 16, E_CORES)),
        ),
        # E-core list unreadable, empty or invalid: the host is treated as non-hybrid
        (HYBRID, {ATOM: None, STATUS: status_text("0-7")}, CpuBudget(4, 16, cpuset_why(4, 16))),
        (HYBRID, {ATOM: "\n", STATUS: status_text("0-7")}, CpuBudget(4, 16, cpuset_why(4, 16))),
        (HYBRID, {ATOM: "16-x\n", STATUS: status_text("0-7")}, CpuBudget(4, 16, cpuset_why(4, 16))),
        (HYBRID, {ATOM: None, CPU_MAX: "400000 100000\n"}, CpuBudget(4, 16, "cgroup quota of 4 CPU")),
        # SMT host
        (SMT, {STATUS: status_text("0,4")}, CpuBudget(1, 4, cpuset_why(1, 4))),
        (SMT, {STATUS: status_text("0-1,4-5")}, CpuBudget(2, 4, cpuset_why(2, 4))),
        (SMT, {STATUS: status_text("0-3")}, None),  # 4 threads on 4 distinct cores: no smaller budget
        (SMT, {CPU_MAX: "400000 100000\n"}, None),  # quota = cores
        (SMT, {CPU_MAX: "50000 100000\n"}, CpuBudget(1, 4, "cgroup quota of 1 CPU")),
        (SMT, {CPU_MAX: "max 100000\n"}, None),
        (SMT, {STATUS: status_text("0-15")}, None),  # allowed beyond online: same as all
        (CPUSET, {CPU_MAX: "100000 100000\n"}, CpuBudget(1, 8, "cgroup quota of 1 CPU")),
        (CPUSET, {CPU_MAX: "300000 100000\n"}, CpuBudget(2, 8, cpuset_why(2, 8))),  # quota above the cpuset
        (CPUSET, {CPU_MAX: "200000 100000\n"}, CpuBudget(2, 8, cpuset_why(2, 8))),  # equal: cpuset reason kept
        # v1 quota seen through cpu,cpuacct
        (
            SMT,
            {
                "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "200000\n",
                "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            },
            CpuBudget(2, 4, "cgroup quota of 2 CPU"),
        ),
        # real capture with a quota added: one CPU out of two cores
        (
            THIS_HOST,
            {"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "100000\n"},
            CpuBudget(1, 2, "cgroup quota of 1 CPU"),
        ),
        (THIS_HOST, {STATUS: status_text("1")}, CpuBudget(1, 2, cpuset_why(1, 2))),
    ],
)
def test_cpuset_threads_variants(tmp_path: Path, base: Path, files: dict, expected: CpuBudget | None) -> None:
    assert cpuset_threads(variant(base, tmp_path, files)) == expected


@pytest.mark.parametrize(
    ("base", "files"),
    [
        (CPUSET, {ONLINE: None}),  # online unreadable
        (CPUSET, {ONLINE: "\n"}),  # online empty
        (CPUSET, {ONLINE: "0-x\n"}),  # online invalid
        (CPUSET, {ONLINE: "7-0\n"}),
        (CPUSET, {STATUS: None}),  # status missing
        (CPUSET, {STATUS: "Name:\tx\n"}),  # no Cpus_allowed_list line
        (CPUSET, {STATUS: status_text("zero")}),
        (CPUSET, {STATUS: status_text("32-33")}),  # nothing allowed is online
        (CPUSET, {STATUS: status_text("")}),
        # a sibling file missing anywhere it is needed: zero budget
        (CPUSET, {"sys/devices/system/cpu/cpu9/topology/thread_siblings": None}),  # an allowed CPU
        (CPUSET, {"sys/devices/system/cpu/cpu15/topology/thread_siblings": None}),  # only in the host count
        (CPUSET, {"sys/devices/system/cpu/cpu3": None}),
        (HYBRID, {CPU_MAX: "400000 100000\n", "sys/devices/system/cpu/cpu20/topology/thread_siblings": None}),
        (SMT_QUOTA, {"sys/devices/system/cpu/cpu0/topology": None}),
    ],
)
def test_cpuset_threads_unknown(tmp_path: Path, base: Path, files: dict) -> None:
    assert cpuset_threads(variant(base, tmp_path, files)) is None


def test_cpuset_threads_empty_root(tmp_path: Path) -> None:
    assert cpuset_threads(str(tmp_path)) is None
