"""RAM probes: host memory, container memory limit, and a unit's own usage (spec section 4.5).

Pure parsers work on strings; the readers take ``root`` so tests feed captured
trees. Every failure is "unknown" (0), never an exception.
"""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_root_file

# Above this a cgroup value means "no limit": cgroup v1 reports 2^63 rounded down
# to the page size (9223372036854771712) when nothing is set.
NO_LIMIT_BYTES = 1 << 60

CGROUP_V2_MAX = "sys/fs/cgroup/memory.max"
CGROUP_V2_CURRENT = "sys/fs/cgroup/memory.current"
CGROUP_V1_LIMIT = "sys/fs/cgroup/memory/memory.limit_in_bytes"
CGROUP_V1_USAGE = "sys/fs/cgroup/memory/memory.usage_in_bytes"


def _meminfo_kib(value: str) -> int | None:
    """The number of a ``/proc/meminfo`` value such as ``24684084 kB``."""
    fields = value.split()
    if not fields or not fields[0].isascii() or not fields[0].isdigit():
        return None
    return int(fields[0])


def parse_meminfo(text: str) -> tuple[int, int]:
    """(total MiB, available MiB) from ``/proc/meminfo`` text; (0, 0) when unreadable.

    The spec computes ``used = (MemTotal - MemAvailable) / 1024`` and
    ``avail = total - used`` (integer MiB), which rounds differently from
    ``MemAvailable / 1024``; kept as written. Without a MemAvailable line (kernels
    before 3.14) the free part is unknown (0) while the total stays known.
    """
    values: dict[str, int | None] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if sep and key in ("MemTotal", "MemAvailable") and key not in values:
            values[key] = _meminfo_kib(rest)
    total_kib = values.get("MemTotal")
    if not total_kib:
        return 0, 0
    total = total_kib // 1024
    avail_kib = values.get("MemAvailable")
    if avail_kib is None:
        return total, 0
    used = (total_kib - avail_kib) // 1024
    return total, total - used


def read_meminfo(root: str = "/") -> tuple[int, int]:
    """(total MiB, available MiB) of the host kernel, from ``<root>/proc/meminfo``."""
    text = read_root_file(root, "proc/meminfo")
    return parse_meminfo(text) if text is not None else (0, 0)


def parse_cgroup_bytes(text: str | None) -> int:
    """A cgroup memory value in MiB; 0 for ``max``, garbage, <= 0 or >= 2^60 ("no limit")."""
    if text is None:
        return 0
    value = text.strip()
    if not value.isascii() or not value.isdigit():
        return 0
    number = int(value)
    if number <= 0 or number >= NO_LIMIT_BYTES:
        return 0
    return number >> 20


def cgroup_memory(root: str = "/") -> tuple[int, int]:
    """(limit MiB, current MiB) of the cgroup seen at ``<root>/sys/fs/cgroup``; (0, 0) = no limit.

    v2 first; when it gives no limit, v1 (the seed does the same, so a v2 ``max``
    does not hide a v1 limit on a hybrid layout).
    """
    limit = parse_cgroup_bytes(read_root_file(root, CGROUP_V2_MAX))
    if limit > 0:
        return limit, parse_cgroup_bytes(read_root_file(root, CGROUP_V2_CURRENT))
    limit = parse_cgroup_bytes(read_root_file(root, CGROUP_V1_LIMIT))
    if limit > 0:
        return limit, parse_cgroup_bytes(read_root_file(root, CGROUP_V1_USAGE))
    return 0, 0


def combine_ram(total: int, avail: int, limit: int, current: int) -> tuple[int, int]:
    """Apply a container limit to the host figures (spec section 4.5)."""
    if limit <= 0:
        return total, avail
    if total == 0 or limit < total:
        total = limit
    free = limit - current
    if free >= 0 and (avail == 0 or free < avail):
        avail = free
    return total, avail


def ram_facts(root: str = "/") -> tuple[int, int]:
    """(RAMMiB, RAMAvailMiB) as the planner wants them: host figures capped by the cgroup limit."""
    total, avail = read_meminfo(root)
    limit, current = cgroup_memory(root)
    return combine_ram(total, avail, limit, current)


def _safe_unit_name(unit: str) -> bool:
    # A unit name is one path component; anything else could walk out of the slice.
    return bool(unit) and "/" not in unit and "\0" not in unit and unit not in (".", "..")


def parse_memory_stat(text: str | None, key: str) -> int:
    """Bytes of one ``memory.stat`` line (``anon 123``) in MiB; 0 when absent."""
    for line in (text or "").splitlines():
        name, _sep, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value.strip()) >> 20
    return 0


# Where a cgroup's anonymous memory is, and its whole charge when memory.stat is missing.
_V2_MEMORY = ("anon", "memory.current")
_V1_MEMORY = ("total_rss", "memory.usage_in_bytes")


def _cgroup_anon_mib(root: str, directories: list[tuple[str, tuple[str, str]]]) -> int:
    """The anonymous memory (MiB) of the first of ``directories`` (cgroup dir, v1/v2 names) that exists."""
    for directory, (stat_key, total_file) in directories:
        stat = read_root_file(root, f"{directory}/memory.stat")
        if stat is not None:
            return parse_memory_stat(stat, stat_key)
        text = read_root_file(root, f"{directory}/{total_file}")
        if text is not None:
            return parse_cgroup_bytes(text)
    return 0


def unit_memory_mib(unit: str, root: str = "/") -> int:
    """Anonymous memory of a systemd unit of ``system.slice`` (MiB); 0 when absent or unreadable.

    The module adds it back to the free RAM so that the instance's own running
    service does not shrink the plan once it runs (plans must not flap: docs/architecture.md). Only the
    anonymous part (KV cache, compute buffers, a --no-mmap model): the page
    cache of an mmap-ed model is already counted in ``MemAvailable``, so adding
    it again would overstate the free RAM. v2: ``anon`` of
    ``system.slice/<unit>/memory.stat``; v1: ``total_rss`` of
    ``memory/system.slice/<unit>/memory.stat``. Without a memory.stat, the whole
    charge (``memory.current`` / ``memory.usage_in_bytes``) is the fallback.
    """
    if not _safe_unit_name(unit):
        return 0
    return _cgroup_anon_mib(root, [
        (f"sys/fs/cgroup/system.slice/{unit}", _V2_MEMORY),
        (f"sys/fs/cgroup/memory/system.slice/{unit}", _V1_MEMORY),
    ])


def _cgroup_paths(text: str) -> tuple[str, str]:
    """(unified path, v1 memory-controller path) of a ``/proc/<pid>/cgroup`` text."""
    unified = memory = ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            unified = parts[2].strip()
        elif "memory" in parts[1].split(","):
            memory = parts[2].strip()
    return unified, memory


def _safe_path(path: str) -> bool:
    return path.startswith("/") and ".." not in path.split("/") and "\0" not in path


def process_memory_mib(pid: int, root: str = "/") -> int:
    """Anonymous memory of the cgroup of process ``pid`` (MiB; 0 when unknown): a container's, through its
    main process, read as ``unit_memory_mib`` reads a unit's. The v1 memory controller's cgroup first (a
    hybrid host charges memory there), else the unified one.
    """
    if pid <= 0:
        return 0
    unified, memory = _cgroup_paths(read_root_file(root, f"proc/{pid}/cgroup") or "")
    directories = []
    if memory and _safe_path(memory):
        directories.append((f"sys/fs/cgroup/memory{memory}", _V1_MEMORY))
    if unified and _safe_path(unified):
        directories.append((f"sys/fs/cgroup{unified}", _V2_MEMORY))
    return _cgroup_anon_mib(root, directories)
