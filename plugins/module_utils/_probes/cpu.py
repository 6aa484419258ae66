"""Container CPU budget: cpuset, cgroup CPU quota and core topology (spec section 7.2).

llama.cpp, left alone, starts one thread per physical core of the whole host
(E-cores left out), even inside a container confined to two cores. This probe
finds the smaller budget the container really has. Readers take ``root`` so
tests feed captured trees; every failure means "no budget" (None / 0).

The caller skips the probe when LLAMA_ARG_THREADS is set (spec section 4.8).
"""

from __future__ import annotations

import re

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import CpuBudget
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_root_file

# The kernel never prints wider ranges; a larger one is garbage, not a CPU list.
MAX_RANGE_WIDTH = 65536
DEFAULT_CFS_PERIOD_US = 100000

CPU_ONLINE = "sys/devices/system/cpu/online"
CPU_ATOM = "sys/devices/cpu_atom/cpus"  # E-cores of an Intel hybrid CPU
PROC_STATUS = "proc/self/status"
CPU_MAX_V2 = "sys/fs/cgroup/cpu.max"
CPU_DIRS_V1 = ("sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct")

_INTEGER = re.compile(r"[+-]?[0-9]+")


def _list_number(text: str) -> int:
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"not an integer: {text!r}")
    number = int(text)
    if number < 0:
        raise ValueError(f"negative CPU number: {number}")
    return number


def parse_cpu_list(text: str) -> list[int]:
    """Kernel CPU list syntax (``0-3,8-11``) to a sorted list of unique CPU numbers.

    Items are trimmed and empty ones skipped. Raises ValueError on a non-integer,
    a negative number, a reversed range (b < a) or a range wider than 65536.
    """
    cpus: set[int] = set()
    for raw_item in text.split(","):
        item = raw_item.strip()
        if not item:
            continue
        # Split on the first '-' after the first character, so "-1" is a (negative) number.
        dash = item.find("-", 1)
        if dash < 0:
            cpus.add(_list_number(item))
            continue
        first, last = _list_number(item[:dash]), _list_number(item[dash + 1 :])
        if last < first:
            raise ValueError(f"reversed range: {item!r}")
        if last - first > MAX_RANGE_WIDTH:
            raise ValueError(f"range wider than {MAX_RANGE_WIDTH}: {item!r}")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def _read_cpu_list(root: str, relative: str) -> list[int] | None:
    text = read_root_file(root, relative)
    if text is None:
        return None
    try:
        return parse_cpu_list(text)
    except ValueError:
        return None


def _parse_int(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return int(text) if _INTEGER.fullmatch(text) else None


def quota_cpus(quota: int | None, period: int | None) -> int:
    """ceil(quota / period), at least 1; 0 when unlimited (-1) or invalid."""
    if quota is None or period is None or quota <= 0 or period <= 0:
        return 0
    return max(1, -(-quota // period))


def parse_cpu_max(text: str) -> int:
    """cgroup v2 ``cpu.max`` (``<quota> <period>`` or ``max <period>``) as whole CPUs; 0 = no quota."""
    fields = text.split()
    if not fields or fields[0] == "max":
        return 0
    period = _parse_int(fields[1]) if len(fields) > 1 else DEFAULT_CFS_PERIOD_US
    return quota_cpus(_parse_int(fields[0]), period)


def cpu_quota(root: str = "/") -> int:
    """CPU quota of the cgroup at ``<root>/sys/fs/cgroup`` in whole CPUs; 0 = none or unreadable.

    v2 ``cpu.max`` when the file exists, else v1 ``cpu.cfs_quota_us`` /
    ``cpu.cfs_period_us`` in ``cpu/`` or ``cpu,cpuacct/`` (first one readable).
    """
    text = read_root_file(root, CPU_MAX_V2)
    if text is not None:
        return parse_cpu_max(text)
    for directory in CPU_DIRS_V1:
        quota = read_root_file(root, f"{directory}/cpu.cfs_quota_us")
        if quota is not None:
            period = read_root_file(root, f"{directory}/cpu.cfs_period_us")
            return quota_cpus(_parse_int(quota), _parse_int(period))
    return 0


def allowed_cpus(status_text: str) -> list[int] | None:
    """``Cpus_allowed_list`` of a ``/proc/<pid>/status`` text; None when missing or invalid."""
    for line in status_text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key == "Cpus_allowed_list":
            try:
                return parse_cpu_list(value)
            except ValueError:
                return None
    return None


class _TopologyError(Exception):
    """A thread_siblings file could not be read: the whole budget is unknown."""


def physical_cores(root: str, cpus: list[int], exclude: frozenset[int] = frozenset()) -> int:
    """Distinct ``thread_siblings`` masks over ``cpus`` minus ``exclude`` (= physical cores).

    Raises _TopologyError when a sibling file is unreadable (spec: zero budget).
    """
    masks: set[str] = set()
    for cpu in cpus:
        if cpu in exclude:
            continue
        text = read_root_file(root, f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings")
        if text is None:
            raise _TopologyError(cpu)
        masks.add(text.strip())
    return len(masks)


def cpuset_threads(root: str = "/") -> CpuBudget | None:
    """The thread budget of a confined container (spec section 7.2); None = no budget to apply.

    ``engine`` is what llama.cpp would start on its own, ``n`` what the
    container can really run; a budget is returned only when 0 < n < engine.
    """
    online = _read_cpu_list(root, CPU_ONLINE)
    if not online:
        return None
    status = read_root_file(root, PROC_STATUS)
    allowed_all = allowed_cpus(status) if status is not None else None
    if allowed_all is None:
        return None
    online_set = set(online)
    allowed = [cpu for cpu in allowed_all if cpu in online_set]
    if not allowed:
        return None
    restricted = len(allowed) < len(online)
    quota = cpu_quota(root)
    if not restricted and quota == 0:
        return None
    atom_list = _read_cpu_list(root, CPU_ATOM)
    # Only a non-empty E-core list says the host is hybrid.
    atom = frozenset(atom_list) if atom_list else None
    try:
        host_all = physical_cores(root, online)
        host_math = (physical_cores(root, online, atom) if atom else 0) or host_all
        if restricted:
            engine = host_all
            n = (physical_cores(root, allowed, atom) if atom else 0) or physical_cores(root, allowed)
            why = f"container cpuset, {n} physical cores allowed out of {host_all}"
            if atom:
                why += " (E-cores excluded)"
        else:
            engine = n = host_math
            why = ""
    except _TopologyError:
        return None
    if 0 < quota < n:
        n, why = quota, f"cgroup quota of {quota} CPU"
    if not 0 < n < engine:
        return None
    return CpuBudget(n=n, engine=engine, why=why)
