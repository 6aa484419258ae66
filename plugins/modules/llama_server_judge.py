#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_judge
short_description: Judge one host against its llama-server plans, changing nothing (target side of llama_server_host)
version_added: "0.3.0"
description:
  - The target half of C(llamafleet.llamacpp.llama_server_host); that action builds its options from the role's
    variables. Use the action; these options are its wire format.
  - In one run on the target, under the planning venv's interpreter, it reads what the role would change in
    the parts every instance shares - the service account and directories, the planning runtime, the engine (or
    the compose runtime's image), the model markers (no model is hashed), instances in state absent. Only when
    those are in place does it plan each present instance, render its files and judge it with the very code of
    C(llamafleet.llamacpp.llama_server_apply) (files, the running engine's command line and environment, the
    unit's or container's state), then read C(/health) and C(/props) of its engine; it stops at the first
    instance with work.
  - The host is RV(current) when none of it would change and every engine runs its plan healthy; the report
    rows then describe what runs. Otherwise RV(why) says what the role has to do.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.instance_settings
  - llamafleet.llamacpp.attributes
options:
  instances:
    description:
      - The present instances, their presets layered and without any key (C(name), C(preset),
        C(environment)).
    type: list
    elements: dict
    default: []
  keys:
    description: The API key of each instance that has one, by instance name.
    type: dict
    default: {}
  absent:
    description: Names of the instances in state absent.
    type: list
    elements: str
    default: []
  account:
    description: The service account as the role creates it (C(user), C(group), C(home), C(shell), C(comment)).
    type: dict
    required: true
  directories:
    description: The role's directories (C(path), C(owner), C(group), C(mode)).
    type: list
    elements: dict
    default: []
  planning_venv:
    description: The planning venv's marker file (C(marker)) and the manifest it must hold (C(manifest)).
    type: dict
    required: true
  engine:
    description:
      - C(bin), an installed engine; or C(marker) and C(checksum) of an engine installed from an archive. Not read
        with the compose runtime, whose engine is in the image.
    type: dict
    default: {}
  models:
    description: The model files (C(path), C(checksum)).
    type: list
    elements: dict
    default: []
  unit_dir:
    description: Where the units are.
    type: str
    default: /etc/systemd/system
  lock_path:
    description: The rollout lock file, read only.
    type: str
    default: /run/llamafleet/rollout.lock
seealso:
  - module: llamafleet.llamacpp.llama_server_host
  - module: llamafleet.llamacpp.llama_server_apply
attributes:
  check_mode:
    details: Changes nothing in any mode.
"""

EXAMPLES = r"""
# Called by the llamafleet.llamacpp.llama_server_host action; see that one.
- name: Judge this host
  llamafleet.llamacpp.llama_server_host:
    instances: "{{ llama_server_instances }}"
    presets: "{{ llama_server_presets }}"
    engine_bin: /usr/local/bin/llama-server
"""

RETURN = r"""
current:
  description: Nothing would change and every present instance runs its plan, healthy.
  returned: always
  type: bool
why:
  description: What the role would do, first things first (empty when RV(current)).
  returned: always
  type: list
  elements: str
report:
  description: The instances' report rows, from what runs (only when RV(current)).
  returned: always
  type: list
  elements: dict
engine:
  description: The engine binary as installed (its path inside the image with the compose runtime); empty when the
    engine step has work.
  returned: always
  type: str
lock_holder:
  description: Who holds the rollout lock (empty when it is free).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import host, instance  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.compose import (  # noqa: E402
    docker_environment,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (  # noqa: E402
    LOCK_PATH,
    UNIT_DIR,
    model_marker_dir,
    paths_of,
    unit_path,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import (  # noqa: E402
    settings_spec,
)

ARGUMENT_SPEC = {
    "instances": {"type": "list", "elements": "dict", "default": []},
    "keys": {"type": "dict", "default": {}, "no_log": True},
    "absent": {"type": "list", "elements": "str", "default": []},
    "settings": settings_spec(),
    "account": {"type": "dict", "required": True},
    "directories": {"type": "list", "elements": "dict", "default": []},
    "planning_venv": {"type": "dict", "required": True},
    "engine": {"type": "dict", "default": {}},
    "models": {"type": "list", "elements": "dict", "default": []},
    "unit_dir": {"type": "str", "default": UNIT_DIR},
    "lock_path": {"type": "str", "default": LOCK_PATH},
}


def shared_problems(params: dict, run, docker_run) -> tuple[str, list[str]]:
    """(the engine, what the role would change in the parts every instance shares)."""
    settings = params["settings"]
    compose = settings["runtime"] == "compose"
    why = host.account_problems(params["account"]) + host.directory_problems(params["directories"])
    venv = params["planning_venv"]
    why += [problem for problem in [host.runtime_problem(venv["marker"], venv["manifest"])] if problem]
    engine, problem = "", ""
    if compose:
        engine = settings["image_binary"]
        problem = host.image_problem(docker_run, settings) if params["instances"] else ""
    elif params["instances"]:
        engine, problem = host.engine_binary(params["engine"])
    why += [problem] if problem else []
    why += host.model_problems(params["models"], model_marker_dir(settings["models_dir"]))
    for name in params["absent"]:
        paths = paths_of(name, settings, settings["compose_dir"] if compose else "")
        left = host.absent_problem(name, paths, "" if compose else unit_path(name, params["unit_dir"]),
                                   (lambda n: host.container_known(docker_run, settings, n)) if compose
                                   else (lambda n: host.unit_known(run, n)))
        why += [left] if left else []
    return engine, why


def judge(params: dict, run, docker_run) -> dict:
    engine, why = shared_problems(params, run, docker_run)
    report = []
    image_ids: dict = {}
    if not why:
        # The instances are judged only on a host whose shared parts are in place: their plans need them.
        for item in params["instances"]:
            entry, problem = instance.judge(
                {**item, "settings": params["settings"], "engine": engine,
                 "api_key": str(params["keys"].get(item["name"]) or "")},
                run, docker_run, unit_dir=params["unit_dir"], image_ids=image_ids)
            if problem:
                why.append(problem)
                break
            report.append(entry)
    return {"current": not why, "why": why, "report": report if not why else [], "engine": engine,
            "lock_holder": host.read_lock(params["lock_path"])}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    for key in module.params["keys"].values():
        if key:
            module.no_log_values.add(str(key))
    docker_env = docker_environment(module.params["settings"])
    try:
        result = judge(module.params, lambda argv: module.run_command(list(argv)),
                       lambda argv: module.run_command(list(argv), environ_update=docker_env))
    except (OSError, KeyError, ValueError, TypeError) as err:
        # A judge that cannot read the host leaves it to the role's steps, which say what is wrong.
        result = {"current": False, "why": [f"the host could not be judged: {err}"], "report": [], "engine": "",
                  "lock_holder": {}}
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
