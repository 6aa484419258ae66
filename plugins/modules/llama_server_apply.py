#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_apply
short_description: Plan, render and apply one llama-server instance on this host, judged by what runs
version_added: "0.2.0"
description:
  - The target half of C(llamafleet.llamacpp.llama_server_instance), in one run on the host, for either runtime
    (O(settings.runtime)) - a systemd unit per instance, or a service of the host's compose project.
  - Plans the instance (the probes and the engine's own parser, as C(llamafleet.llamacpp.llama_server_plan) does),
    refuses a server open beyond loopback without a key, and renders its files (the hardened unit and its
    credentials, or the compose file and its key).
  - Decides from what runs, not only from the files. The engine is restarted (the container recreated) when a file
    it reads changed, when it runs another command line or environment than the plan's, when it maps a model file
    that was replaced, when systemd holds an older copy of the unit (C(NeedDaemonReload)), or when the unit is
    failed or at its start limit, or the container stopped. A file whose comment lines alone changed (the plan's
    notes) is rewritten without a restart, and RV(rewritten) says so.
  - A new compose file is checked by C(docker compose config) before it is written. After a restart it waits for
    C(/health) 200, then checks that the engine runs the plan, with C(GET /props) (context per slot,
    C(total_slots), C(model_path)) and the new engine's command line. On failure it restores the last files that
    were verified healthy, or removes a new instance that never worked, and reports the engine's own last words
    (its journal, or the container's log).
  - With O(state=absent) it stops the service and removes every file the instance had.
  - With O(state=stopped) it stops the service and keeps it from starting at boot (systemd C(disable --now); a
    container stopped by hand, which its restart policy leaves stopped). Every file stays, so with
    O(state=present) again the instance starts as it was. Nothing is planned.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.instance_settings
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
options:
  name:
    description: The instance's name (the unit C(llama-server-<name>.service), or the service C(<name>)).
    type: str
    required: true
  state:
    description: C(present) deploys the instance; C(stopped) stops it and keeps its files; C(absent) removes it.
    type: str
    choices: [present, stopped, absent]
    default: present
  preset:
    description:
      - The instance's preset, already layered (its named preset, its settings, its port, host and GPU selection;
        see C(llamafleet.llamacpp.llama_server_instance)), without any key.
    type: dict
    default: {}
  environment:
    description: The instance's own environment, applied over O(settings.environment).
    type: dict
    default: {}
  api_key:
    description:
      - The instance's API key. It goes into a root-only credential file (or the compose secret's file) and serves
        to read C(/props); it is never in the unit, the command line, the result or the log.
    type: str
    default: ""
  engine:
    description:
      - The C(llama-server) binary on the host; with the compose runtime the engine's path inside the image
        (default O(settings.image_binary)).
    type: str
    default: ""
  placement:
    description:
      - For a replica placed by the deploy playbook (C(llama_fleet_deployments)) - its record, kept in the instance's
        state file once it is verified (the judge finds the fleet's replicas by it), and the margins its host keeps
        free. Before such a replica starts (none of it runs yet), C(llama-fit-params --fit-print on) next to the
        engine projects the planned launch's memory per device, and a projection above the free memory less the
        margins fails the step before anything changes.
    type: dict
    suboptions:
      deployment:
        description: The deployment's name.
        type: str
        required: true
      replica:
        description: The replica's number (from 0).
        type: int
        required: true
      port:
        description: The port the placement gave it.
        type: int
        default: 0
      cuda_visible_devices:
        description: The cards the placement gave it (UUIDs), C(-1) for none on a host with cards, empty without.
        type: str
        default: ""
      ram_margin_mib:
        description: RAM the host keeps free (MiB).
        type: int
        default: 1024
      gpu_margin_mib:
        description: Memory each card keeps free (MiB).
        type: int
        default: 1024
  router:
    description:
      - For a router instance (the instance's C(models), see C(llamafleet.llamacpp.llama_server_instance)) - its
        models and its own flags. Each model is planned on this host as an instance of its own would be, its
        arguments go through the engine's own parser, and they become that model's section of the models file the
        router reads (C(--models-preset)); O(preset) then holds only where the router listens.
      - A change of the router's own launch restarts it. A change of some models' sections is a reload
        (C(GET /models?reload=1)) - the other models' children keep running - judged from what the running router
        lists in C(/v1/models). See C(docs/router.md).
    type: dict
    suboptions:
      models:
        description: Each model - its id (what clients ask for) and its layered preset, without a key.
        type: list
        elements: dict
        required: true
      models_max:
        description:
          - How many models may be loaded at once (C(--models-max)); by default the most that always fit together
            in this host's free memory, from the plans' estimates. A larger value is refused.
        type: int
      autoload:
        description: Whether a request loads an unloaded model (C(--no-models-autoload) when false).
        type: bool
        default: true
      sleep_idle_seconds:
        description: C(--sleep-idle-seconds) of the children, where the engine has it.
        type: int
notes:
  - Needs root, and systemd or the docker CLI with its compose v2 plugin. Planning needs the C(gguf) package (the
    role's planning venv); O(state=absent) and O(state=stopped) need only the Python standard library.
seealso:
  - module: llamafleet.llamacpp.llama_server_instance
  - module: llamafleet.llamacpp.llama_server_plan
attributes:
  check_mode:
    details: Takes the same decisions (RV(would_restart), RV(reasons)) from the same readings and changes nothing.
  diff_mode:
    support: full
    details: The unit or compose file's before and after; credential files are never shown.
"""

EXAMPLES = r"""
# Usually run by the llamafleet.llamacpp.llama_server_instance action; on its own:
- name: Deploy one instance
  llamafleet.llamacpp.llama_server_apply:
    name: main
    preset: {MODEL: gemma-3-270m-q4_k_m.gguf, CTX: 4096, HOST: 127.0.0.1, PORT: 8080}
    engine: /opt/llamafleet/engines/b11434/bin/llama-server
    api_key: "{{ vault_llama_key }}"
  vars:
    ansible_python_interpreter: /opt/llamafleet/venv/bin/python

- name: Stop an instance for a maintenance, keeping its files
  llamafleet.llamacpp.llama_server_apply:
    name: main
    state: stopped

- name: Remove an instance
  llamafleet.llamacpp.llama_server_apply:
    name: old
    state: absent
"""

RETURN = r"""
report:
  description:
    - The instance's report row. C(state) is C(deployed), C(previewed) (check mode), C(external), C(stopped),
      C(absent) or C(failed); C(ctx) is the context the running engine reports (per slot, times the slots),
      C(pid), C(health) and C(build) are read from the running engine, C(reasons) say why it was (or would be)
      restarted.
  returned: always
  type: dict
plan:
  description: What the plan decided (argv, env, notes, decisions, facts), without any key.
  returned: when planned
  type: dict
state:
  description: C(deployed), C(previewed) (check mode) or C(failed).
  returned: when planned
  type: str
restarted:
  description: The engine was (re)started, or its container recreated, by this run.
  returned: when planned
  type: bool
would_restart:
  description: The engine must be (re)started (in check mode, what a real run would do).
  returned: when planned
  type: bool
reasons:
  description: Why it is (or would be) restarted; empty when it runs the plan.
  returned: when planned
  type: list
  elements: str
  sample: ["the running engine's command line is not the plan's: word 6 is '4096', the plan has '8192'"]
rewritten:
  description: Files rewritten without a restart because only their comments changed.
  returned: when planned
  type: list
  elements: str
  sample: ["the unit file"]
pid:
  description: The engine's main PID after this run (0 when none).
  returned: when planned
  type: int
health:
  description: The last C(/health) status (200 ready, 503 loading, -1 nothing listening, 0 no answer).
  returned: when planned
  type: int
props:
  description: What the running engine reports (C(n_ctx) per slot, C(total_slots), C(model_path), C(build_info)).
  returned: when planned
  type: dict
runs_plan:
  description: The running engine has the planned command line.
  returned: when planned
  type: bool
unit_state:
  description: The service manager's view after this run (systemd's, or the container's state).
  returned: when planned
  type: dict
rolled_back:
  description: A failed change was rolled back to the last verified files, which run healthy again.
  returned: when planned
  type: bool
engine_says:
  description: The engine's last log lines after a failed start (its own words).
  returned: on failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import instance  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.compose import (  # noqa: E402
    docker_environment,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import (  # noqa: E402
    settings_spec,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import (  # noqa: E402
    DEFAULT_GPU_MARGIN_MIB,
    DEFAULT_RAM_MARGIN_MIB,
)

ARGUMENT_SPEC = {
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["present", "stopped", "absent"], "default": "present"},
    "preset": {"type": "dict", "default": {}},
    "environment": {"type": "dict", "default": {}},
    "api_key": {"type": "str", "default": "", "no_log": True},
    "engine": {"type": "str", "default": ""},
    "settings": settings_spec(),
    "placement": {"type": "dict", "default": None, "options": {
        "deployment": {"type": "str", "required": True},
        "replica": {"type": "int", "required": True},
        "port": {"type": "int", "default": 0},
        "cuda_visible_devices": {"type": "str", "default": ""},
        "ram_margin_mib": {"type": "int", "default": DEFAULT_RAM_MARGIN_MIB},
        "gpu_margin_mib": {"type": "int", "default": DEFAULT_GPU_MARGIN_MIB},
    }},
    "router": {"type": "dict", "default": None, "options": {
        "models": {"type": "list", "elements": "dict", "required": True},
        "models_max": {"type": "int"},
        "autoload": {"type": "bool", "default": True},
        "sleep_idle_seconds": {"type": "int"},
    }},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    docker_env = docker_environment(module.params["settings"])
    outcome = instance.apply(
        module.params,
        lambda argv: module.run_command(list(argv)),
        lambda argv: module.run_command(list(argv), environ_update=docker_env),
        check_mode=module.check_mode,
        diff=module._diff,
    )
    result = {"changed": False, **outcome.result}
    if outcome.failure:
        module.fail_json(msg=outcome.failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
