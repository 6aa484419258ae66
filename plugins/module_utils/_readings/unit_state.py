# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What systemd and /proc say of a unit, as one ``UnitState``: the properties asked of ``systemctl show`` and the
parsers of its output and of the main process's ``cmdline``, ``environ`` and ``maps``.

Pure. The probes read the texts (``_probes/service.py``; the compose runtime builds the same shape from ``docker
inspect``) and the judgements decide from the shape (``_judgements/running_state.py``): neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# Properties read with ``systemctl show --property=...``; the order does not matter.
SHOW_PROPERTIES = (
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "MainPID",
    "NeedDaemonReload",
    "UnitFileState",
    "NRestarts",
)
# A unit with a main process in these states runs its engine (Type=exec: "activating" while it starts);
# "auto-restart" is a crash loop waiting for its next try.
RUNNING = ("active", "reloading", "activating")


@dataclass(frozen=True)
class UnitState:
    """What systemd and /proc say about one unit. ``cmdline``/``environ`` are those of MainPID (empty when
    it has none, or they could not be read: ``environ`` None)."""

    load_state: str = ""
    active_state: str = ""
    sub_state: str = ""
    result: str = ""
    main_pid: int = 0
    need_daemon_reload: bool = False
    unit_file_state: str = ""
    n_restarts: int = 0
    cmdline: tuple[str, ...] = ()
    environ: Mapping[str, str] | None = field(default=None)
    # Files the main process maps that are gone from disk (replaced or deleted since it opened them).
    deleted_maps: tuple[str, ...] = ()

    @property
    def loaded(self) -> bool:
        return self.load_state == "loaded"

    @property
    def running(self) -> bool:
        return self.active_state in RUNNING and self.sub_state != "auto-restart" and self.main_pid > 0

    @property
    def start_limited(self) -> bool:
        return self.result == "start-limit-hit"

    def as_dict(self) -> dict:
        return {
            "load_state": self.load_state,
            "active_state": self.active_state,
            "sub_state": self.sub_state,
            "result": self.result,
            "main_pid": self.main_pid,
            "need_daemon_reload": self.need_daemon_reload,
            "unit_file_state": self.unit_file_state,
            "n_restarts": self.n_restarts,
        }


def _int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        return 0


def parse_show(text: str) -> dict[str, str]:
    """``systemctl show`` output (``Key=value`` lines) as a mapping."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def unit_state(
    show: Mapping[str, str],
    cmdline: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    deleted_maps: Sequence[str] = (),
):
    return UnitState(
        load_state=show.get("LoadState", ""),
        active_state=show.get("ActiveState", ""),
        sub_state=show.get("SubState", ""),
        result=show.get("Result", ""),
        main_pid=_int(show.get("MainPID", "0")),
        need_daemon_reload=show.get("NeedDaemonReload", "no") == "yes",
        unit_file_state=show.get("UnitFileState", ""),
        n_restarts=_int(show.get("NRestarts", "0")),
        cmdline=tuple(cmdline),
        environ=environ,
        deleted_maps=tuple(deleted_maps),
    )


def parse_cmdline(data: bytes) -> tuple[str, ...]:
    """/proc/<pid>/cmdline: NUL-separated words, with a trailing NUL."""
    if not data:
        return ()
    return tuple(word.decode("utf-8", "surrogateescape") for word in data.rstrip(b"\0").split(b"\0"))


def parse_environ(data: bytes) -> dict[str, str]:
    """/proc/<pid>/environ: NUL-separated ``KEY=value`` entries."""
    env = {}
    for entry in data.split(b"\0"):
        key, sep, value = entry.partition(b"=")
        if sep and key:
            env[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return env


DELETED = " (deleted)"
# Anonymous shared memory the kernel also shows as deleted files.
NOT_FILES = ("/memfd:", "/SYSV", "/dev/zero")


def parse_deleted_maps(text: str) -> tuple[str, ...]:
    """/proc/<pid>/maps: the paths of mapped files the kernel marks deleted, each once, in order."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if (len(fields) == 6 and fields[5].endswith(DELETED) and fields[5].startswith("/")
                and not fields[5].startswith(NOT_FILES)):
            found[fields[5][: -len(DELETED)]] = None
    return tuple(found)
