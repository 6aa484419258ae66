# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One compose instance on the target: its compose file and key, checked, written, verified and put back.

``llama_server_compose`` runs it for the instance action, which applies the project between its steps with
``community.docker.docker_compose_v2`` (whose wait is the health wait). The last verified files are kept under
``<last_good_dir>/<name>``, as for units, so a failed change goes back to what last ran healthy.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.files import (
    keep_copies,
    read_bytes,
    read_copies,
    write_atomically,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import props_problems
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import (
    http_get,
    props_summary,
    read_props,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import SLOT_SCRIPT

Runner = Callable[[Sequence[str]], tuple[int, str, str]]
KEY_MODE = 0o640  # root, readable by the service group: compose binds it read-only into the container


class ComposeApplyError(Exception):
    pass


class ComposeInstance:
    def __init__(self, params: Mapping, run: Runner):
        self.params = params
        self.run = run
        self.name = params["instance"]
        self.compose_file = os.path.join(params["compose_dir"], f"{self.name}.yaml")
        self.last_good = os.path.join(params["last_good_dir"], self.name)
        self.files = [(self.compose_file, params["compose_content"].encode(), 0o644, "the compose file")]
        if params["key_file"]:
            self.files.append((params["key_file"], params["key_content"].encode(), KEY_MODE, "the API key"))

    # ---------------------------------------------------------------- readings
    def changed(self) -> list[str]:
        found = [label for path, content, _mode, label in self.files if read_bytes(path) != content]
        stale_key = self.params["stale_key_file"]
        if stale_key and os.path.lexists(stale_key):
            found.append(f"{stale_key} (no longer used)")
        return found

    def key_changed(self) -> bool:
        return bool(self.params["key_file"]) and read_bytes(self.params["key_file"]) != self.files[1][1]

    def project_files(self) -> list[str]:
        """The project's compose files (one per instance of the host), this one included."""
        directory = self.params["compose_dir"]
        names = set(os.listdir(directory)) if os.path.isdir(directory) else set()
        names.add(os.path.basename(self.compose_file))
        return sorted(name for name in names if name.endswith(".yaml"))

    def docker(self, *args: str) -> tuple[int, str, str]:
        return self.run([self.params["docker_cli"], *args])

    def container_command(self) -> list[str] | None:
        """The running container's command (what runs), None when there is no such container."""
        rc, out, _err = self.docker("inspect", "--format", "{{json .Config.Cmd}}", self.params["container"])
        if rc != 0:
            return None
        try:
            value = json.loads(out.strip() or "null")
        except ValueError:
            return None
        return [str(word) for word in value] if isinstance(value, list) else None

    def observe(self) -> tuple[dict, dict | None]:
        params = self.params
        headers = {"Authorization": f"Bearer {params['api_key']}"} if params["api_key"] else {}
        health, _body = http_get(params["health_url"], timeout=5.0)
        props = read_props(params["health_url"], headers=headers) if health == 200 else None
        command = self.container_command()
        report = {"health": health, "props": props_summary(props),
                  "runs_plan": command is not None and command == list(params["command"])}
        return report, props

    def verify(self, props: dict | None, runs_plan: bool) -> list[str]:
        problems = []
        if not runs_plan:
            problems.append(f"the container {self.params['container']} does not run the planned command")
        if props is None:
            problems.append("the engine gave no /props")
        else:
            problems += [f"/props: {problem}" for problem in props_problems(props, self.params["expect"])]
        return problems

    def logs(self) -> list[str]:
        rc, out, err = self.docker("logs", "--tail", str(self.params["log_lines"]), self.params["container"])
        return (out + err).splitlines()[-int(self.params["log_lines"]):] if rc == 0 else []

    # ---------------------------------------------------------------- changes
    def _validate(self, content: bytes) -> None:
        """`docker compose config` on the new file before it replaces the old one."""
        directory = self.params["compose_dir"]
        os.makedirs(directory, mode=0o755, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".check-", suffix=".yaml", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
            rc, out, err = self.docker("compose", "--project-name", self.params["project"], "--file", temporary,
                                       "config", "--quiet")
        finally:
            os.unlink(temporary)
        if rc != 0:
            raise ComposeApplyError(f"docker compose config refused the compose file: {(err or out).strip()}")

    def _ensure_dirs(self) -> None:
        uid = pwd.getpwnam(self.params["user"]).pw_uid
        gid = grp.getgrnam(self.params["group"]).gr_gid
        for path in (self.params["home_dir"], self.params["slot_dir"]):
            if path:
                os.makedirs(path, mode=0o700, exist_ok=True)
                os.chown(path, uid, gid)
                os.chmod(path, 0o700)

    def is_new(self) -> bool:
        """No verified files and no compose file: a failure removes the instance instead of going back."""
        return not self.last_good_files() and not os.path.exists(self.compose_file)

    def diff(self) -> dict:
        before = read_bytes(self.compose_file)
        return {"before_header": self.compose_file, "after_header": self.compose_file,
                "before": before.decode("utf-8", "replace") if before is not None else "",
                "after": self.params["compose_content"]}

    def _keep_as_fallback(self) -> None:
        """A compose file deployed before verified copies were kept (an older release): it is what runs, so it
        becomes the copy a failure goes back to."""
        if self.last_good_files() or not os.path.exists(self.compose_file):
            return
        keep_copies(self.last_good, [(path, current, mode) for path, _content, mode, _label in self.files
                                     if (current := read_bytes(path)) is not None])

    def write(self) -> None:
        self._validate(self.files[0][1])
        self._keep_as_fallback()
        self._ensure_dirs()
        group_id = grp.getgrnam(self.params["group"]).gr_gid
        for path, content, mode, _label in self.files:
            if read_bytes(path) != content:
                write_atomically(path, content, mode)
                if path != self.compose_file:
                    os.chown(path, 0, group_id)
        stale_key = self.params["stale_key_file"]
        if stale_key and os.path.lexists(stale_key):
            os.unlink(stale_key)
        if self.params["slot_dir"]:
            # The systemd unit's ExecStartPre rule, run before the container is recreated.
            rc, out, err = self.run(["sh", "-c", SLOT_SCRIPT, "sh", self.params["slot_dir"],
                                     "1" if self.params["slot_persist"] else "0"])
            if rc != 0:
                raise ComposeApplyError(f"emptying the slot directory failed: {(err or out).strip()}")

    def keep_last_good(self) -> None:
        keep_copies(self.last_good, [(path, content, mode) for path, content, mode, _label in self.files])
        state_file, state_content = self.params["state_file"], self.params["state_content"].encode()
        if state_file and read_bytes(state_file) != state_content:
            write_atomically(state_file, state_content, 0o644)

    def last_good_files(self) -> dict[str, bytes]:
        found = read_copies(self.last_good)
        return found if self.compose_file in found else {}

    def restore(self) -> str:
        """Put the last verified files back ("restored"), or remove a new instance's files ("removed")."""
        previous = self.last_good_files()
        if not previous:
            for path, *_rest in self.files:
                if os.path.lexists(path):
                    os.unlink(path)
            if self.params["state_file"] and os.path.lexists(self.params["state_file"]):
                os.unlink(self.params["state_file"])
            if os.path.isdir(self.last_good):
                shutil.rmtree(self.last_good)
            return "removed"
        group_id = grp.getgrnam(self.params["group"]).gr_gid
        for path, content in previous.items():
            write_atomically(path, content, 0o644 if path == self.compose_file else KEY_MODE)
            if path != self.compose_file:
                os.chown(path, 0, group_id)
        for path, *_rest in self.files:
            if path not in previous and os.path.lexists(path):
                os.unlink(path)
        return "restored"
