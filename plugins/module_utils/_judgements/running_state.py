"""Whether an instance must be (re)started, judged by what runs, not by the files we wrote.

Pure: the readings (``systemctl show`` and the MainPID's ``/proc`` entries, or ``docker inspect`` of the
container) come in as a ``UnitState``. A unit file that is already right on disk does not make a running engine
right: a rollout interrupted after the write, a ``daemon-reload`` that never happened, or a unit at its start
limit all leave the old engine (or none) running while the files look done. Each is a reason to restart, named
for the report. The same engine checks (its command line, the model files it maps, its environment) serve both
runtimes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    KEY_VARIABLE,
    is_engine_variable,
)

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
# How many words may stand before the planned binary in a running argv: a script's interpreter and one
# option of it (``/bin/sh /opt/bin/llama-server ...``, ``/usr/bin/python3 -u wrapper.py ...``).
MAX_INTERPRETER_WORDS = 2


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


def argv_matches(running: Sequence[str], planned: Sequence[str],
                 interpreter_words: int = MAX_INTERPRETER_WORDS) -> bool:
    """The running argv is the planned one; a script engine runs under its interpreter, which comes first."""
    if not planned:
        return not running
    skips = range(min(interpreter_words, len(running)) + 1)
    return any(list(running[skip:]) == list(planned) for skip in skips)


def first_difference(running: Sequence[str], planned: Sequence[str]) -> str:
    """A short, secret-free description of where two argv differ (argv never holds a key)."""
    for index, (have, want) in enumerate(zip(running, planned, strict=False)):
        if have != want:
            return f"word {index} is {have!r}, the plan has {want!r}"
    if len(running) != len(planned):
        return f"it has {len(running)} words, the plan {len(planned)}"
    return "they are equal"


def environment_differences(running: Mapping[str, str], planned: Mapping[str, str],
                            unplanned_engine_variables: bool = True) -> list[str]:
    """Variable names (never values) where the engine's environment is not the unit's.

    ``planned``: every variable the unit sets. A planned one missing or different, or an engine variable
    (LLAMA_ARG_*, GGML_*, CUDA_*) that the unit does not set, is a difference. A container also has its image's
    variables, which the service cannot unset: ``unplanned_engine_variables=False`` judges the planned ones only.
    """
    names = [name for name, value in planned.items() if running.get(name) != value]
    if not unplanned_engine_variables:
        return names
    # The key variable of an engine without --api-key-file comes from the unit's EnvironmentFile=.
    names += sorted(
        name for name in running
        if name not in planned and name != KEY_VARIABLE and is_engine_variable(name)
    )
    return names


def engine_reasons(state: UnitState, planned_argv: Sequence[str], planned_env: Mapping[str, str], *,
                   interpreter_words: int = MAX_INTERPRETER_WORDS,
                   unplanned_engine_variables: bool = True) -> list[str]:
    """Why a running engine is not the plan: its command line, a model file replaced under it, its environment."""
    reasons = []
    if not argv_matches(state.cmdline, planned_argv, interpreter_words):
        reasons.append("the running engine's command line is not the plan's: "
                       + first_difference(state.cmdline, planned_argv))
    models = [path for path in state.deleted_maps if path.endswith(".gguf")]
    if models:
        reasons.append("the engine still maps a model file that was replaced on disk: " + ", ".join(models))
    if state.environ is not None:
        differing = environment_differences(state.environ, planned_env, unplanned_engine_variables)
        if differing:
            reasons.append("the running engine's environment is not the plan's: " + ", ".join(differing))
    return reasons


def restart_reasons(
    state: UnitState,
    planned_argv: Sequence[str],
    planned_env: Mapping[str, str],
    changed_files: Sequence[str] = (),
) -> list[str]:
    """Why a systemd instance must be (re)started; [] = it runs the plan and nothing it reads changed."""
    reasons = [f"{name} changed" for name in changed_files]
    if not state.loaded:
        reasons.append("the unit is not loaded yet")
        return reasons
    if state.need_daemon_reload:
        reasons.append("systemd still holds an older copy of the unit (NeedDaemonReload)")
    if state.start_limited:
        reasons.append("the unit hit its start limit (start-limit-hit)")
    elif state.active_state == "failed":
        reasons.append(f"the unit failed ({state.result or 'no result'})")
    if not state.running:
        reasons.append(f"the engine is not running ({state.active_state or 'unknown'}/{state.sub_state or '?'})")
        return reasons
    return reasons + engine_reasons(state, planned_argv, planned_env)


def container_reasons(
    state: UnitState,
    planned_command: Sequence[str],
    planned_env: Mapping[str, str],
    changed_files: Sequence[str] = (),
) -> list[str]:
    """Why a compose instance's container must be recreated; [] = it runs the plan and nothing it reads changed.

    ``state`` is the container's (``load_state`` "loaded" when it exists, ``cmdline`` its command without the
    entrypoint); ``planned_command`` the plan's argv without the binary.
    """
    reasons = [f"{name} changed" for name in changed_files]
    if not state.loaded:
        reasons.append("the container does not exist yet")
        return reasons
    if not state.running:
        reasons.append(f"the container is not running ({state.sub_state or 'unknown'})")
        return reasons
    return reasons + engine_reasons(state, planned_command, planned_env, interpreter_words=0,
                                    unplanned_engine_variables=False)
