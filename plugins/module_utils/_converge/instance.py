# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One systemd instance on the target: its files, its unit and its engine, read and changed.

``llama_server_apply`` runs the whole of it (judge, write, restart, wait, verify, roll back);
``llama_server_host`` only judges (``Instance.judge``), with the very same readings, so "nothing to do" means the
same thing on both paths. ``params`` are the apply module's options (``_render/instance_request.apply_request``).
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.running_state import (
    UnitState,
    argv_matches,
    first_difference,
    restart_reasons,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.files import (
    keep_copies,
    read_bytes,
    read_copies,
    write_atomically,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import props_problems
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import http_get as probe_http_get
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import (
    journal_tail,
    props_summary,
    read_props,
    read_unit_state,
    wait_healthy,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import unit_name, unit_path

UNIT_LABEL = "the unit file"
HOME_MODE = 0o700

Runner = Callable[[Sequence[str]], tuple[int, str, str]]


class ApplyError(Exception):
    pass


@dataclass(frozen=True)
class Judgement:
    """What applying the instance now would do, from one reading of its files and its unit."""

    before: UnitState
    changed_files: tuple[str, ...]
    reasons: tuple[str, ...]  # why the engine must restart; () = it may keep running
    enable: bool  # the unit is not enabled yet
    home_current: bool
    state_current: bool
    last_good_current: bool

    @property
    def settled(self) -> bool:
        """Nothing to write, enable or restart (the engine's health is judged apart)."""
        return not (self.reasons or self.enable) and self.home_current and self.state_current

    def why_not_settled(self) -> str:
        if self.reasons:
            return "would restart: " + self.reasons[0]
        if self.enable:
            return "its unit is not enabled"
        if not self.home_current:
            return "its home directory is missing or has another owner or mode"
        if not self.state_current:
            return "its planning state file differs"
        return ""


def environment_of(params: Mapping) -> dict[str, str]:
    return {str(k): "" if v is None else str(v) for k, v in (params.get("environment") or {}).items()}


class Instance:
    """One instance's files, unit and engine, as the apply step sees and changes them."""

    def __init__(self, params: Mapping, run: Runner):
        self.params = params
        self.run = run
        self.name = params["instance"]
        self.unit = unit_name(self.name)
        self.unit_path = unit_path(self.name)
        self.last_good = os.path.join(params["last_good_dir"], self.name)
        self.files = [(self.unit_path, params["unit_content"].encode(), 0o644, UNIT_LABEL)]
        for item in params["credentials"]:
            self.files.append((item["path"], item["content"].encode(), 0o600, item["label"]))
        self.remove = [path for path in params["remove"] if os.path.lexists(path)]
        self.headers = {"Authorization": f"Bearer {params['api_key']}"} if params["api_key"] else {}

    # ---------------------------------------------------------------- readings
    def state(self) -> UnitState:
        return read_unit_state(self.run, self.unit)

    def changed_files(self) -> list[str]:
        labels = [label for path, content, _mode, label in self.files if read_bytes(path) != content]
        labels += [f"{path} (no longer used)" for path in self.remove]
        return labels

    def home_current(self) -> bool:
        """The instance's home exists as ensure_home leaves it: a directory of the service account, mode 0700."""
        try:
            found = os.stat(self.params["home_dir"])
            uid = pwd.getpwnam(self.params["user"]).pw_uid
            gid = grp.getgrnam(self.params["group"]).gr_gid
        except (OSError, KeyError):
            return False
        return (stat.S_ISDIR(found.st_mode) and found.st_uid == uid and found.st_gid == gid
                and stat.S_IMODE(found.st_mode) == HOME_MODE)

    def state_current(self) -> bool:
        path = self.params["state_file"]
        return not path or read_bytes(path) == self.params["state_content"].encode()

    def last_good_current(self) -> bool:
        return self.last_good_files() == {path: content for path, content, _mode, _label in self.files}

    def judge(self) -> Judgement:
        changed = self.changed_files()
        before = self.state()
        return Judgement(
            before=before,
            changed_files=tuple(changed),
            reasons=tuple(restart_reasons(before, self.params["argv"], environment_of(self.params), changed)),
            enable=before.unit_file_state not in ("enabled", "enabled-runtime"),
            home_current=self.home_current(),
            state_current=self.state_current(),
            last_good_current=self.last_good_current(),
        )

    def observe(self) -> tuple[dict, UnitState, dict | None]:
        """One reading of what runs: the report's part of it, the unit's state, and /props (None: none given)."""
        params = self.params
        state = self.state()
        health, _body = probe_http_get(params["health_url"], params["health_unix_socket"], timeout=5.0)
        props = None
        if health == 200:
            props = read_props(params["health_url"], params["health_unix_socket"], headers=self.headers)
        report = {
            "pid": state.main_pid if state.running else 0,
            "health": health,
            "props": props_summary(props),
            "runs_plan": state.running and argv_matches(state.cmdline, params["argv"]),
            "unit_state": state.as_dict(),
        }
        return report, state, props

    def verify(self, state: UnitState, props: dict | None) -> list[str]:
        """Where the engine is not the plan: its main process's argv, then /props."""
        params = self.params
        problems = []
        if not argv_matches(state.cmdline, params["argv"]):
            problems.append("the started engine's command line is not the plan's: "
                            + first_difference(state.cmdline, params["argv"]))
        if props is None:
            problems.append("the engine answered /health but gave no /props")
        else:
            problems += [f"/props: {problem}" for problem in props_problems(props, params["expect"])]
        return problems

    def unit_diff(self) -> dict:
        before = read_bytes(self.unit_path)
        return {
            "before_header": self.unit_path,
            "after_header": self.unit_path,
            "before": before.decode("utf-8", "replace") if before is not None else "",
            "after": self.params["unit_content"],
        }

    # ---------------------------------------------------------------- changes
    def write_files(self) -> None:
        for path, content, mode, _label in self.files:
            if read_bytes(path) != content:
                write_atomically(path, content, mode)
        for path in self.remove:
            os.unlink(path)

    def write_state(self) -> bool:
        if self.state_current():
            return False
        write_atomically(self.params["state_file"], self.params["state_content"].encode(), 0o644)
        return True

    def systemctl(self, *args, check=True):
        rc, out, err = self.run(["systemctl", *args])
        if check and rc != 0:
            raise ApplyError(f"systemctl {' '.join(args)} failed: {(err or out).strip()}")
        return rc

    def keep_last_good(self) -> None:
        """Copy what now runs healthy, so a later failure (even after an interrupted run) can go back to it."""
        keep_copies(self.last_good, [(path, content, mode) for path, content, mode, _label in self.files])

    def last_good_files(self) -> dict[str, bytes]:
        """{original path: content} of the last verified deployment; {} when there is none."""
        found = read_copies(self.last_good)
        return found if self.unit_path in found else {}

    def on_disk(self) -> dict[str, bytes]:
        """The instance's files as they are now (the rollback when no verified copy exists yet)."""
        paths = [path for path, *_rest in self.files] + self.remove
        found = {path: read_bytes(path) for path in paths}
        return {path: content for path, content in found.items() if content is not None}

    def restore(self, previous: dict[str, bytes]) -> None:
        for path, content in previous.items():
            write_atomically(path, content, 0o644 if path == self.unit_path else 0o600)
        for path, *_rest in self.files:
            if path not in previous and os.path.lexists(path):
                os.unlink(path)

    def start(self, reset: bool) -> None:
        self.systemctl("daemon-reload")
        if reset:
            self.systemctl("reset-failed", self.unit, check=False)
        self.systemctl("enable", self.unit)
        self.systemctl("restart", self.unit)

    def wait(self) -> tuple[int, str]:
        params = self.params

        def still_starting() -> bool:
            return self.state().running

        return wait_healthy(
            params["health_url"],
            params["health_unix_socket"],
            timeout_s=params["health_timeout_s"],
            listen_timeout_s=params["listen_timeout_s"],
            delay_s=params["health_delay_s"],
            still_starting=still_starting,
        )

    def remove_all(self) -> None:
        """Take away a new instance that never worked: its unit, files, state and verified copy."""
        self.systemctl("disable", "--now", self.unit, check=False)
        for path, *_rest in self.files:
            if os.path.lexists(path):
                os.unlink(path)
        state_file = self.params["state_file"]
        if state_file and os.path.lexists(state_file):
            os.unlink(state_file)
        if os.path.isdir(self.last_good):
            shutil.rmtree(self.last_good)
        self.systemctl("daemon-reload")
        self.systemctl("reset-failed", self.unit, check=False)


@dataclass
class Deployment:
    """The outcome of deploy(): the result fields, and why it failed ("" when it did not)."""

    result: dict
    failure: str = ""


def deploy(instance: Instance, before: UnitState, result: dict) -> Deployment:
    """Write, restart, wait, verify; on any failure go back to the last verified unit (or remove a new one)."""
    previous = instance.last_good_files() or (instance.on_disk() if before.running else {})
    started_at = f"@{int(time.time())}"
    why = ""
    observed: dict = {}
    try:
        instance.write_files()
        instance.start(reset=before.active_state == "failed" or before.start_limited or before.n_restarts > 0)
        result["restarted"] = True
        status, why = instance.wait()
        result["health"] = status
        if not why:
            # One reading serves the check and the report.
            observed, state, props = instance.observe()
            why = "; ".join(instance.verify(state, props))
    except (OSError, ApplyError) as err:
        why = str(err)
    if not why:
        instance.keep_last_good()
        instance.write_state()
        return Deployment({**result, **observed, "state": "deployed", "changed": True})

    engine_says = journal_tail(instance.run, instance.unit, instance.params["journal_lines"], since=started_at)
    outcome = rollback(instance, previous)
    if outcome == "rolled back":
        result["rolled_back"] = True
        tail = " — rolled back to the last verified unit, which is healthy again"
    elif outcome == "removed":
        tail = " — the new instance was removed"
    else:
        tail = f" — the rollback did not complete: {outcome}"
    observed = instance.observe()[0]
    lines = [f"instance {instance.name}: {why}{tail}"]
    if engine_says:
        lines.append(f"journalctl -u {instance.unit} (last {len(engine_says)} lines since the restart):")
        lines += engine_says
    return Deployment(
        {**result, **observed, "state": "failed", "error": why + tail, "engine_says": engine_says, "changed": True},
        failure="\n".join(lines),
    )


def rollback(instance: Instance, previous: dict[str, bytes]) -> str:
    try:
        if not previous:
            instance.remove_all()
            return "removed"
        instance.restore(previous)
        instance.start(reset=True)
        _status, why = instance.wait()
        return why or "rolled back"
    except (OSError, ApplyError) as err:
        return str(err)
