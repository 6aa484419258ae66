#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_compose
short_description: The files and checks of one llama-server compose service (target side of llama_server_instance)
version_added: "0.3.0"
description:
  - The target half of the compose runtime of C(llamafleet.llamacpp.llama_server_instance), which renders the
    compose file on the controller and applies the project with C(community.docker.docker_compose_v2) between
    the steps of this module. Use the action; these options are its wire format.
  - O(state=written) says what differs (the compose file, the key file, a key no longer used) and, outside check
    mode, checks the new file with C(docker compose config), writes the files atomically, creates the
    instance's directories and empties its slot directory as the systemd unit's C(ExecStartPre) would.
  - O(state=verified) reads what runs - C(/health), C(/props) with the key, the container's command from
    C(docker inspect) - and fails when it is not the plan; when it is, it keeps the files as the last verified
    ones (and the planning state file).
  - O(state=failed) changes nothing and returns the container's last log lines, read before the failed container
    is taken down or replaced.
  - O(state=restored) puts the last verified files back, or removes the files of an instance that never ran
    healthy. A compose file deployed before verified copies were kept counts as the verified one.
author:
  - llamafleet maintainers (@llamafleet)
options:
  state:
    description: The step.
    type: str
    choices: [written, verified, failed, restored]
    default: written
  instance:
    description: The instance's name.
    type: str
    required: true
  compose_content:
    description: The compose file's text.
    type: str
    required: true
  compose_dir:
    description: The project's directory (one file per instance).
    type: path
    required: true
  project:
    description: The compose project's name.
    type: str
    required: true
  container:
    description: The container's name.
    type: str
    required: true
  command:
    description: The planned command of the container (the plan's argv without the binary).
    type: list
    elements: str
    required: true
  key_file:
    description: The host file holding the API key; empty when the instance has no key.
    type: path
    default: ""
  key_content:
    description: The key file's content.
    type: str
    default: ""
  stale_key_file:
    description: A key file the instance no longer uses (removed).
    type: path
    default: ""
  api_key:
    description: The key, to read C(/props).
    type: str
    default: ""
  home_dir:
    description: The instance's directory.
    type: path
    required: true
  slot_dir:
    description: The slot directory bound into the container; empty when none.
    type: path
    default: ""
  slot_persist:
    description: Saved slot states are kept when the slot directory is emptied.
    type: bool
    default: false
  user:
    description: The service account.
    type: str
    required: true
  group:
    description: The service account's group.
    type: str
    required: true
  health_url:
    description: The plan's health URL.
    type: str
    required: true
  expect:
    description: What C(/props) must show (the plan's C(decisions.expect)).
    type: dict
    default: {}
  docker_cli:
    description: The docker CLI.
    type: str
    default: docker
  docker_env:
    description: Environment of the docker CLI (e.g. C(DOCKER_CONFIG) for its compose plugin, C(DOCKER_HOST)).
    type: dict
    default: {}
  last_good_dir:
    description: Where the last verified files are kept.
    type: path
    default: /etc/llamafleet/last-good
  state_file:
    description: The planning state file written once the instance is verified.
    type: path
    default: ""
  state_content:
    description: Its content.
    type: str
    default: ""
  log_lines:
    description: How many lines of the container's log a restore returns.
    type: int
    default: 40
seealso:
  - module: llamafleet.llamacpp.llama_server_instance
attributes:
  check_mode:
    description: O(state=written) says what would change and writes nothing; the other states read only.
    support: full
  diff_mode:
    description: O(state=written) returns the compose file's diff.
    support: full
  platform:
    description: Target systems it runs on.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
# Called by the llamafleet.llamacpp.llama_server_instance action (runtime compose); see that one.
- name: Deploy one instance as a compose service
  llamafleet.llamacpp.llama_server_instance:
    instance: {name: main, preset: small}
    presets: {small: {MODEL: gemma-3-270m-q4_k_m.gguf}}
    runtime: compose
    compose: {image: "ghcr.io/ggml-org/llama.cpp:server", uid: 999, gid: 999}
"""

RETURN = r"""
changed_files:
  description: What differs from the rendered files (O(state=written)).
  returned: always
  type: list
  elements: str
key_changed:
  description: The key file differs (the container must be recreated).
  returned: always
  type: bool
new:
  description: The instance has neither verified files nor a compose file yet (a failure removes it).
  returned: always
  type: bool
project_files:
  description: The project's compose files, for C(docker_compose_v2).
  returned: always
  type: list
  elements: str
health:
  description: C(/health)'s status (O(state=verified)).
  returned: when verified
  type: int
props:
  description: What C(/props) says (context per slot, slots, model, build).
  returned: when verified
  type: dict
runs_plan:
  description: The container runs the planned command.
  returned: when verified
  type: bool
outcome:
  description: C(restored) or C(removed) (O(state=restored)).
  returned: when restored
  type: str
engine_says:
  description: The container's last log lines (O(state=failed)).
  returned: when failed
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.compose_instance import (  # noqa: E402
    ComposeApplyError,
    ComposeInstance,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["written", "verified", "failed", "restored"], "default": "written"},
            "instance": {"type": "str", "required": True},
            "compose_content": {"type": "str", "required": True},
            "compose_dir": {"type": "path", "required": True},
            "project": {"type": "str", "required": True},
            "container": {"type": "str", "required": True},
            "command": {"type": "list", "elements": "str", "required": True},
            "key_file": {"type": "path", "default": ""},
            "key_content": {"type": "str", "default": "", "no_log": True},
            "stale_key_file": {"type": "path", "default": ""},
            "api_key": {"type": "str", "default": "", "no_log": True},
            "home_dir": {"type": "path", "required": True},
            "slot_dir": {"type": "path", "default": ""},
            "slot_persist": {"type": "bool", "default": False},
            "user": {"type": "str", "required": True},
            "group": {"type": "str", "required": True},
            "health_url": {"type": "str", "required": True},
            "expect": {"type": "dict", "default": {}},
            "docker_cli": {"type": "str", "default": "docker"},
            "docker_env": {"type": "dict", "default": {}},
            "last_good_dir": {"type": "path", "default": "/etc/llamafleet/last-good"},
            "state_file": {"type": "path", "default": ""},
            "state_content": {"type": "str", "default": ""},
            "log_lines": {"type": "int", "default": 40},
        },
        supports_check_mode=True,
    )
    params = module.params
    docker_env = {str(k): str(v) for k, v in params["docker_env"].items()}
    service = ComposeInstance(params, lambda argv: module.run_command(list(argv), environ_update=docker_env))
    result = {"changed": False, "new": service.is_new(), "project_files": service.project_files(),
              "changed_files": [], "key_changed": False}
    try:
        if params["state"] == "written":
            result["changed_files"] = service.changed()
            result["key_changed"] = service.key_changed()
            if module._diff and "the compose file" in result["changed_files"]:
                result["diff"] = service.diff()
            if result["changed_files"] and not module.check_mode:
                service.write()
                result["project_files"] = service.project_files()
            result["changed"] = bool(result["changed_files"])
        elif params["state"] == "verified":
            observed, props = service.observe()
            result.update(observed)
            problems = service.verify(props, observed["runs_plan"]) if observed["health"] == 200 else [
                f"/health answers {observed['health']}"]
            if problems:
                module.fail_json(msg="; ".join(problems), problems=problems, **result)
            if not module.check_mode:
                service.keep_last_good()
        elif params["state"] == "failed":
            result["engine_says"] = service.logs()
        else:
            result["outcome"] = service.restore() if not module.check_mode else "previewed"
            result["project_files"] = service.project_files()
            result["changed"] = True
    except (OSError, KeyError, ComposeApplyError) as err:
        module.fail_json(msg=f"instance {params['instance']}: {err}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
