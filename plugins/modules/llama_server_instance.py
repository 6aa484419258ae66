#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/llama_server_instance.py; this file holds its documentation,
# which is also its argument spec (the action reads the options below, so they are declared once).

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_instance
short_description: Plan, render and apply one llama-server instance as a systemd service
version_added: "0.2.0"
description:
  - The one step of the C(llamafleet.llamacpp.llama_server) role per instance. On the controller it layers the
    instance's preset (its named preset, then its C(settings), then its port, host and GPU selection),
    takes the API key out of it, and plans the instance on the target with C(llamafleet.llamacpp.llama_server_plan)
    (probes, the typed preset, the engine's own parser as preflight).
  - It renders the hardened systemd unit from the plan in Python and hands it to
    C(llamafleet.llamacpp.llama_server_apply), which writes it, restarts only when what runs differs from the
    plan, waits for C(/health), verifies C(/props) and rolls back on failure.
  - Returns the instance's report row (RV(report)), built from what runs on the host.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.instance_settings
options:
  instance:
    description:
      - The instance, as an item of the role's C(llama_server_instances) (C(name), C(preset), C(settings),
        C(port), C(host), C(cuda_visible_devices), C(api_key), C(environment)).
    type: dict
    required: true
  engine:
    description: Path of the C(llama-server) binary on the target.
    type: str
    default: ""
  runtime:
    description:
      - C(systemd) (a unit per instance) or C(compose) (a service of the host's compose project, applied with
        C(community.docker.docker_compose_v2), which must be installed on the controller).
    type: str
    choices: [systemd, compose]
    default: systemd
  compose:
    description: The compose runtime's settings (with O(runtime=compose)).
    type: dict
    default: {}
    suboptions:
      image:
        description: The image that runs the engine (its entrypoint is C(llama-server)).
        type: str
        default: ""
      image_id:
        description: The image's ID, kept as a label so a new image under the same name recreates the container.
        type: str
        default: ""
      project:
        description: The compose project of the host.
        type: str
        default: llamafleet
      dir:
        description: The project's directory, one file per instance.
        type: str
        default: /etc/llamafleet/compose
      docker_cli:
        description: The docker CLI on the target.
        type: str
        default: docker
      docker_host:
        description: The daemon (C(DOCKER_HOST)); empty for the default.
        type: str
        default: ""
      docker_env:
        description: Environment of the docker CLI on the target (e.g. C(DOCKER_CONFIG) for its plugins).
        type: dict
        default: {}
      uid:
        description: The service account's uid (the container's user).
        type: int
        default: 0
      gid:
        description: The service account's gid.
        type: int
        default: 0
      health_command:
        description: The container's health check command, before the health URL.
        type: list
        elements: str
        default: [curl, --fail, --silent, --show-error, --output, /dev/null, --max-time, "4"]
      log_lines:
        description: How many lines of a failed container's log are reported.
        type: int
        default: 40
      nofile:
        description: The container's open-files limit; 0 keeps the daemon's.
        type: int
        default: 0
  pending:
    description:
      - Why the instance cannot be planned yet (check mode on a host where the engine, the planning runtime or a
        model is not installed). When set, nothing runs and the row says C(pending).
    type: str
    default: ""
notes:
  - The API key (C(api_key) of O(instance), or the preset's C(API_KEY)) goes only into root-only credential files on the
    target. It is never in the unit, the command line, the result or the log.
seealso:
  - module: llamafleet.llamacpp.llama_server_plan
  - module: llamafleet.llamacpp.llama_server_apply
attributes:
  action:
    description: Runs on the controller and calls modules on the target.
    support: full
  async:
    description: Cannot run asynchronously.
    support: none
  check_mode:
    description: Can run in check mode and predict its result without changing the target.
    support: full
    details: The plan and apply modules take the same decisions and change nothing; the row says C(previewed).
  diff_mode:
    description: Shows the unit file's diff.
    support: full
  platform:
    description: Target systems it runs on.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Deploy one instance
  llamafleet.llamacpp.llama_server_instance:
    instance: {name: main, preset: small, port: 8080, api_key: "{{ vault_llama_key }}"}
    presets: {small: {MODEL: gemma-3-270m-q4_k_m.gguf, CTX: 4096}}
    engine: /opt/llamafleet/engines/b11434/bin/llama-server
    python: /opt/llamafleet/venv/bin/python
  register: deployed
"""

RETURN = r"""
report:
  description:
    - The instance's report row. C(state) is C(deployed), C(previewed), C(external), C(pending) or C(failed);
      C(ctx) is the context the running engine reports (per slot, times the slots), C(pid), C(health) and
      C(build) are read from the running engine, C(reasons) say why it was (or would be) restarted.
  returned: always
  type: dict
plan:
  description: The plan module's result (argv, env, notes, decisions, facts), without the key.
  returned: when planned
  type: dict
applied:
  description: The apply module's result.
  returned: when applied
  type: dict
"""
