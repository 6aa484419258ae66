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

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.instance import (  # noqa: E402
    HOME_MODE,
    UNIT_LABEL,
    ApplyError,
    Instance,
    deploy,
)

ARGUMENT_SPEC = {
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
}


def ensure_home(module: AnsibleModule) -> bool:
    params = module.params
    changed = not os.path.isdir(params["home_dir"])
    os.makedirs(params["home_dir"], mode=HOME_MODE, exist_ok=True)
    file_args = module.load_file_common_arguments(
        {"path": params["home_dir"], "owner": params["user"], "group": params["group"], "mode": f"{HOME_MODE:04o}"}
    )
    return module.set_fs_attributes_if_different(file_args, changed)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    instance = Instance(params, lambda argv: module.run_command(list(argv)))
    judged = instance.judge()
    result = {
        "instance": params["instance"],
        "unit": instance.unit,
        "changed": bool(judged.reasons or judged.enable),
        "restarted": False,
        "would_restart": bool(judged.reasons),
        "reasons": list(judged.reasons),
        "rolled_back": False,
    }
    if module._diff and UNIT_LABEL in judged.changed_files:
        result["diff"] = instance.unit_diff()

    if module.check_mode:
        observed = instance.observe()[0]
        module.exit_json(state="previewed", **result, **observed)

    try:
        result["changed"] |= ensure_home(module)
        if not judged.reasons:
            if judged.enable:
                instance.systemctl("enable", instance.unit)
            observed = instance.observe()[0]
            if observed["health"] == 200 and observed["runs_plan"]:
                instance.keep_last_good()
            result["changed"] |= instance.write_state()
            module.exit_json(state="deployed", **result, **observed)
    except (OSError, ApplyError) as err:
        module.fail_json(msg=f"instance {instance.name}: {err}", state="failed", **result)

    deployment = deploy(instance, judged.before, result)
    if deployment.failure:
        module.fail_json(msg=deployment.failure, **deployment.result)
    module.exit_json(**deployment.result)


if __name__ == "__main__":
    main()
