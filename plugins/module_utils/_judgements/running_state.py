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

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    KEY_VARIABLE,
    is_engine_variable,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import UnitState

# How many words may stand before the planned binary in a running argv: a script's interpreter and one
# option of it (``/bin/sh /opt/bin/llama-server ...``, ``/usr/bin/python3 -u wrapper.py ...``).
MAX_INTERPRETER_WORDS = 2


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
