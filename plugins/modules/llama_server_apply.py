#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_apply
short_description: Apply one rendered llama-server instance as a systemd unit, judged by what runs
version_added: "0.2.0"
description:
  - Writes the unit file and the instance's credential files atomically, then decides whether to restart from
    the running state, not only from the files. The engine is restarted when a file it reads changed, when
    its main process runs another command line or environment than the plan's, when systemd holds an older
    copy of the unit (C(NeedDaemonReload)), or when the unit is failed or at its start limit (which is reset
    as part of the change).
  - After a restart it waits for C(/health) 200 in-process, then checks that the engine runs the plan, with
    C(GET /props) (context per slot, C(total_slots), C(model_path)) and the new main process's command line. A
    mismatch is a failure.
  - On failure it restores the last unit and credentials that were verified healthy (kept under
    O(last_good_dir)), or removes a new instance that never worked, and reports the engine's own last journal
    lines.
  - Usually called by the C(llamafleet.llamacpp.llama_server_instance) action (the C(llamafleet.llamacpp.llama_server)
    role), which plans and renders the instance; it can be used on its own with a unit rendered elsewhere.
author:
  - llamafleet maintainers (@llamafleet)
options:
  instance:
    description:
      - Instance name. The unit is C(llama-server-<instance>.service) in C(/etc/systemd/system).
    type: str
    required: true
  unit_content:
    description:
      - The complete unit file text. It must hold no secret; keys go in O(credentials).
    type: str
    required: true
  argv:
    description:
      - The planned command line, binary first, as the unit's C(ExecStart=) runs it. Compared with the running
        main process's C(/proc/<pid>/cmdline); a script engine may run under its interpreter.
    type: list
    elements: str
    required: true
  environment:
    description:
      - Every variable the unit sets with C(Environment=). Compared with the running main process's environment
        by name; values are never returned.
    type: dict
    default: {}
  credentials:
    description:
      - Root-only files the unit reads (its API key file, an environment file with C(LLAMA_API_KEY)). Written
        atomically, mode C(0600), owner root. Their content is never logged or returned.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the file.
        type: path
        required: true
      content:
        description: The file's content.
        type: str
        required: true
      label:
        description: How the file is named in the restart reasons (for example C(the API key)).
        type: str
        default: a credential
  remove:
    description:
      - Files that must not exist any more (credentials the instance no longer uses). A removal restarts it.
    type: list
    elements: path
    default: []
  home_dir:
    description: The instance's directory, created mode C(0700) for O(user).
    type: path
    required: true
  user:
    description: Owner of O(home_dir) (the service account).
    type: str
    required: true
  group:
    description: Group of O(home_dir).
    type: str
    required: true
  expect:
    description:
      - What C(/props) must show, as the plan's C(decisions.expect) (C(ctx), C(slots), C(kv_unified),
        C(model_path)); a zero or empty field is not judged.
    type: dict
    default: {}
  api_key:
    description:
      - The instance's API key, sent as a bearer token to read C(/props). Never logged or returned.
    type: str
    default: ""
  health_url:
    description: Where this host asks the engine's C(/health) (the plan's C(decisions.health_url)).
    type: str
    required: true
  health_unix_socket:
    description: The engine's UNIX socket when it listens on one (the plan's C(decisions.health_unix_socket)).
    type: str
    default: ""
  health_timeout_s:
    description: How long a (re)started engine may take to answer C(/health) 200 (it answers 503 while loading).
    type: int
    default: 120
  listen_timeout_s:
    description: How long nothing may listen after a start before the start counts as failed.
    type: int
    default: 30
  health_delay_s:
    description: Seconds between two C(/health) readings.
    type: float
    default: 1.0
  journal_lines:
    description: How many of the unit's last journal lines a failure reports.
    type: int
    default: 40
  last_good_dir:
    description:
      - Root-only directory that keeps, per instance, the last unit and credentials verified healthy. They are
        the rollback, including after a rollout that was interrupted between writing and restarting.
    type: path
    default: /etc/llamafleet/last-good
  state_file:
    description: A small file written after a verified deployment (the role keeps its planning state there).
    type: path
  state_content:
    description: The content of O(state_file).
    type: str
    default: ""
notes:
  - Needs systemd and root on the target. Only the Python standard library is used.
  - Rendering never happens here, and nothing is re-derived from the command line except what C(/props) is
    compared with, which comes in O(expect).
seealso:
  - module: llamafleet.llamacpp.llama_server_plan
attributes:
  check_mode:
    description: Can run in check mode and predict its result without changing the target.
    support: full
    details: Takes the same decisions (RV(would_restart), RV(reasons)) from the same readings and changes nothing.
  diff_mode:
    description: Returns the unit file's before and after in diff mode.
    support: full
    details: Credential files are never shown.
  platform:
    description: Target systems it runs on.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Apply a unit rendered elsewhere
  llamafleet.llamacpp.llama_server_apply:
    instance: main
    unit_content: "{{ lookup('ansible.builtin.file', 'llama-server-main.service') }}"
    argv: [/opt/llama/bin/llama-server, -m, /srv/models/m.gguf, -c, "8192", --port, "8080"]
    home_dir: /var/lib/llamafleet/instances/main
    user: llamafleet
    group: llamafleet
    health_url: http://127.0.0.1:8080/health
    expect: {ctx: 8192, slots: 1, model_path: /srv/models/m.gguf}
"""

RETURN = r"""
state:
  description: C(deployed), C(previewed) (check mode) or C(failed).
  returned: always
  type: str
restarted:
  description: The engine was (re)started by this run.
  returned: always
  type: bool
would_restart:
  description: The engine must be (re)started (in check mode, what a real run would do).
  returned: always
  type: bool
reasons:
  description: Why it is (or would be) restarted; empty when it runs the plan.
  returned: always
  type: list
  elements: str
  sample: ["the running engine's command line is not the plan's: word 6 is '4096', the plan has '8192'"]
pid:
  description: The engine's main PID after this run (0 when none).
  returned: always
  type: int
health:
  description: The last C(/health) status (200 ready, 503 loading, -1 nothing listening, 0 no answer).
  returned: always
  type: int
props:
  description: What the running engine reports (C(n_ctx) per slot, C(total_slots), C(model_path), C(build_info)).
  returned: always
  type: dict
runs_plan:
  description: The running main process has the planned command line.
  returned: always
  type: bool
unit_state:
  description: systemd's view of the unit after this run.
  returned: always
  type: dict
rolled_back:
  description: A failed change was rolled back to the last verified unit, which is healthy again.
  returned: always
  type: bool
engine_says:
  description: The unit's last journal lines after a failed start (the engine's own words).
  returned: on failure
  type: list
  elements: str
"""

import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._apply.running_state import (  # noqa: E402
    UnitState,
    argv_matches,
    first_difference,
    restart_reasons,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import (  # noqa: E402
    props_problems,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import (  # noqa: E402
    http_get as probe_http_get,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import (  # noqa: E402
    journal_tail,
    props_summary,
    read_props,
    read_unit_state,
    wait_healthy,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import (  # noqa: E402
    unit_name,
    unit_path,
)

UNIT_LABEL = "the unit file"


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_atomically(path: str, content: bytes, mode: int) -> None:
    """Write beside the target, fsync, then rename over it: a reader sees the old file or the new one."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".llamafleet-", dir=directory)
    try:
        os.fchmod(fd, mode)
        if os.geteuid() == 0:
            os.fchown(fd, 0, 0)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


class Instance:
    """One instance's files, unit and engine, as this module sees and changes them."""

    def __init__(self, module: AnsibleModule):
        self.module = module
        params = module.params
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
    def run(self, argv):
        rc, out, err = self.module.run_command(list(argv))
        return rc, out, err

    def state(self):
        return read_unit_state(self.run, self.unit)

    def changed_files(self) -> list[str]:
        labels = [label for path, content, _mode, label in self.files if _read(path) != content]
        labels += [f"{path} (no longer used)" for path in self.remove]
        return labels

    def observe(self) -> tuple[dict, UnitState, dict | None]:
        """One reading of what runs: the report's part of it, the unit's state, and /props (None: none given)."""
        params = self.module.params
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

    # ---------------------------------------------------------------- changes
    def write_files(self) -> None:
        for path, content, mode, _label in self.files:
            if _read(path) != content:
                write_atomically(path, content, mode)
        for path in self.remove:
            os.unlink(path)

    def ensure_home(self) -> bool:
        params = self.module.params
        changed = not os.path.isdir(params["home_dir"])
        os.makedirs(params["home_dir"], mode=0o700, exist_ok=True)
        file_args = self.module.load_file_common_arguments(
            {"path": params["home_dir"], "owner": params["user"], "group": params["group"], "mode": "0700"}
        )
        return self.module.set_fs_attributes_if_different(file_args, changed)

    def systemctl(self, *args, check=True):
        rc, out, err = self.run(["systemctl", *args])
        if check and rc != 0:
            raise ApplyError(f"systemctl {' '.join(args)} failed: {(err or out).strip()}")
        return rc

    def keep_last_good(self) -> None:
        """Copy what now runs healthy, so a later failure (even after an interrupted run) can go back to it."""
        os.makedirs(self.last_good, mode=0o700, exist_ok=True)
        os.chmod(os.path.dirname(self.last_good), 0o700)
        wanted = set()
        for path, content, mode, _label in self.files:
            copy = os.path.join(self.last_good, path.strip("/").replace("/", "%"))
            wanted.add(copy)
            if _read(copy) != content:
                write_atomically(copy, content, mode)
        for entry in os.listdir(self.last_good):
            full = os.path.join(self.last_good, entry)
            if full not in wanted:
                os.unlink(full)

    def last_good_files(self) -> dict[str, bytes]:
        """{original path: content} of the last verified deployment; {} when there is none."""
        if not os.path.isdir(self.last_good):
            return {}
        found = {}
        for entry in os.listdir(self.last_good):
            content = _read(os.path.join(self.last_good, entry))
            if content is not None:
                found["/" + entry.replace("%", "/")] = content
        return found if self.unit_path in found else {}

    def on_disk(self) -> dict[str, bytes]:
        """The instance's files as they are now (the rollback when no verified copy exists yet)."""
        paths = [path for path, *_rest in self.files] + self.remove
        found = {path: _read(path) for path in paths}
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
        params = self.module.params

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

    def verify(self, state: UnitState, props: dict | None) -> list[str]:
        """Where the started engine is not the plan: its main process's argv, then /props."""
        params = self.module.params
        problems = []
        if not argv_matches(state.cmdline, params["argv"]):
            problems.append("the started engine's command line is not the plan's: "
                            + first_difference(state.cmdline, params["argv"]))
        if props is None:
            problems.append("the engine answered /health but gave no /props")
        else:
            problems += [f"/props: {problem}" for problem in props_problems(props, params["expect"])]
        return problems


class ApplyError(Exception):
    pass


def _diff(instance: Instance) -> dict:
    before = _read(instance.unit_path)
    return {
        "before_header": instance.unit_path,
        "after_header": instance.unit_path,
        "before": before.decode("utf-8", "replace") if before is not None else "",
        "after": instance.module.params["unit_content"],
    }


def _write_state(module: AnsibleModule) -> bool:
    path, content = module.params["state_file"], module.params["state_content"].encode()
    if not path or _read(path) == content:
        return False
    write_atomically(path, content, 0o644)
    return True


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "instance": {"type": "str", "required": True},
            "unit_content": {"type": "str", "required": True},
            "argv": {"type": "list", "elements": "str", "required": True},
            "environment": {"type": "dict", "default": {}},
            "credentials": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "path": {"type": "path", "required": True},
                    "content": {"type": "str", "required": True, "no_log": True},
                    "label": {"type": "str", "default": "a credential"},
                },
            },
            "remove": {"type": "list", "elements": "path", "default": []},
            "home_dir": {"type": "path", "required": True},
            "user": {"type": "str", "required": True},
            "group": {"type": "str", "required": True},
            "expect": {"type": "dict", "default": {}},
            "api_key": {"type": "str", "default": "", "no_log": True},
            "health_url": {"type": "str", "required": True},
            "health_unix_socket": {"type": "str", "default": ""},
            "health_timeout_s": {"type": "int", "default": 120},
            "listen_timeout_s": {"type": "int", "default": 30},
            "health_delay_s": {"type": "float", "default": 1.0},
            "journal_lines": {"type": "int", "default": 40},
            "last_good_dir": {"type": "path", "default": "/etc/llamafleet/last-good"},
            "state_file": {"type": "path"},
            "state_content": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    params = module.params
    environment = {str(k): "" if v is None else str(v) for k, v in params["environment"].items()}
    instance = Instance(module)
    changed_files = instance.changed_files()
    before = instance.state()
    reasons = restart_reasons(before, params["argv"], environment, changed_files)
    enable = before.unit_file_state not in ("enabled", "enabled-runtime")
    result = {
        "instance": params["instance"],
        "unit": instance.unit,
        "changed": bool(reasons or enable),
        "restarted": False,
        "would_restart": bool(reasons),
        "reasons": reasons,
        "rolled_back": False,
    }
    if module._diff and UNIT_LABEL in changed_files:
        result["diff"] = _diff(instance)

    if module.check_mode:
        observed = instance.observe()[0]
        module.exit_json(state="previewed", **result, **observed)

    try:
        result["changed"] |= instance.ensure_home()
        if not reasons:
            if enable:
                instance.systemctl("enable", instance.unit)
            observed = instance.observe()[0]
            if observed["health"] == 200 and observed["runs_plan"]:
                instance.keep_last_good()
            result["changed"] |= _write_state(module)
            module.exit_json(state="deployed", **result, **observed)
    except (OSError, ApplyError) as err:
        module.fail_json(msg=f"instance {instance.name}: {err}", state="failed", **result)

    deploy(module, instance, before, result)


def deploy(module: AnsibleModule, instance: Instance, before, result: dict) -> None:
    """Write, restart, wait, verify; on any failure go back to the last verified unit (or remove a new one)."""
    previous = instance.last_good_files() or (instance.on_disk() if before.running else {})
    started_at = f"@{int(time.time())}"
    why = ""
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
        _write_state(module)
        module.exit_json(state="deployed", **{**result, **observed, "changed": True})

    engine_says = journal_tail(instance.run, instance.unit, module.params["journal_lines"], since=started_at)
    outcome = rollback(module, instance, previous)
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
    module.fail_json(
        msg="\n".join(lines), state="failed", error=why + tail, engine_says=engine_says,
        **{**result, **observed, "changed": True},
    )


def rollback(module: AnsibleModule, instance: Instance, previous: dict[str, bytes]) -> str:
    try:
        if not previous:
            instance.systemctl("disable", "--now", instance.unit, check=False)
            for path, *_rest in instance.files:
                if os.path.lexists(path):
                    os.unlink(path)
            state_file = module.params["state_file"]
            if state_file and os.path.lexists(state_file):
                os.unlink(state_file)
            if os.path.isdir(instance.last_good):
                shutil.rmtree(instance.last_good)
            instance.systemctl("daemon-reload")
            instance.systemctl("reset-failed", instance.unit, check=False)
            return "removed"
        instance.restore(previous)
        instance.start(reset=True)
        _status, why = instance.wait()
        return why or "rolled back"
    except (OSError, ApplyError) as err:
        return str(err)


if __name__ == "__main__":
    main()
