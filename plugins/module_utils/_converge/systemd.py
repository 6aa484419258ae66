# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The systemd runtime of the instance step: a hardened unit per instance, judged by its main process.

What runs is systemd's view of the unit (``systemctl show``) and its main process's ``/proc`` entries; a start is
``daemon-reload``, ``reset-failed`` when the unit failed, ``enable`` and ``restart``; the engine's own words are
the unit's journal since the start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step import (
    ManagedFile,
    Rendered,
    RenderError,
    StepError,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.running_state import (
    MAX_INTERPRETER_WORDS,
    restart_reasons,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import UNIT_DIR, unit_name, unit_path
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import (
    Runner,
    journal_tail,
    read_unit_state,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import UnitState
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import credential_content
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import render_instance
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import UnitRenderError

UNIT_LABEL = "the unit file"
# systemd reads lines starting with '#' or ';' as comments.
UNIT_COMMENT = "#"


class SystemdRuntime:
    kind = "systemd"
    interpreter_words = MAX_INTERPRETER_WORDS
    restored_words = "rolled back to the last verified unit, which is healthy again"

    def __init__(self, name: str, settings: Mapping, environment: Mapping[str, str], run: Runner,
                 unit_dir: str = UNIT_DIR):
        self.name = name
        self.settings = settings
        self.environment = environment
        self.run = run
        self.service = unit_name(name)
        self.unit_file = unit_path(name, unit_dir)

    def log_title(self, lines: int) -> str:
        return f"journalctl -u {self.service} (last {lines} lines since the restart):"

    # ---------------------------------------------------------------- the files
    def render(self, planned: Planned, key: str) -> Rendered:
        try:
            rendered = render_instance(self.name, planned, self.settings, self.environment, bool(key))
        except UnitRenderError as err:
            raise RenderError(str(err)) from err
        files = [ManagedFile(self.unit_file, rendered.unit_content.encode(), 0o644, UNIT_LABEL,
                             comment=UNIT_COMMENT)]
        files += [ManagedFile(path, credential_content(holds, key).encode(), 0o600, label)
                  for path, label, holds in rendered.credentials]
        return Rendered(files=tuple(files), remove=rendered.remove, command=tuple(planned.plan.argv),
                        environment=rendered.environment)

    # ---------------------------------------------------------------- what runs
    def read(self) -> UnitState:
        return read_unit_state(self.run, self.service)

    def reasons(self, state: UnitState, rendered: Rendered, changed: Sequence[str]) -> list[str]:
        return restart_reasons(state, rendered.command, rendered.environment, changed)

    def needs_enable(self, state: UnitState) -> bool:
        return state.unit_file_state not in ("enabled", "enabled-runtime")

    def still_starting(self) -> bool:
        return self.read().running

    def engine_says(self, since: float, lines: int) -> list[str]:
        return journal_tail(self.run, self.service, lines, since=f"@{int(since)}")

    # ---------------------------------------------------------------- changes
    def systemctl(self, *args: str, check: bool = True) -> int:
        rc, out, err = self.run(["systemctl", *args])
        if check and rc != 0:
            raise StepError(f"systemctl {' '.join(args)} failed: {(err or out).strip()}")
        return rc

    def check(self, rendered: Rendered) -> None:
        """Nothing to ask before writing: the plan went through the engine's parser, the unit through its quoting."""

    def written(self, rendered: Rendered) -> None:
        # A unit rewritten on disk (its comments) is otherwise "NeedDaemonReload" to systemd; a reload restarts nothing.
        self.systemctl("daemon-reload")

    def enable(self) -> None:
        self.systemctl("enable", self.service)

    def start(self, rendered: Rendered, reset: bool, files_only: bool = False) -> bool:
        """systemd acts on every line of a changed unit: it is always restarted."""
        self.systemctl("daemon-reload")
        if reset:
            self.systemctl("reset-failed", self.service, check=False)
        self.systemctl("enable", self.service)
        self.systemctl("restart", self.service)
        return True

    def halted(self, state: UnitState) -> bool:
        return not state.running and state.active_state != "activating" and self.needs_enable(state)

    def halt(self) -> None:
        """Disabled and stopped at once: no boot and no later start by a dependency brings it back."""
        self.systemctl("disable", "--now", self.service)

    def remove(self) -> bool:
        """Stop and disable the unit; systemd forgets it once its file is gone (the step removes the files)."""
        self.systemctl("disable", "--now", self.service, check=False)
        return True

    def forget(self) -> None:
        """After the unit file is gone: reload, and drop a failed state systemd may still hold."""
        self.systemctl("daemon-reload")
        self.systemctl("reset-failed", self.service, check=False)
