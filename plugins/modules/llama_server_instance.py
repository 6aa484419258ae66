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
options:
  instance:
    description:
      - The instance, as an item of the role's C(llama_server_instances) (C(name), C(preset), C(settings),
        C(port), C(host), C(cuda_visible_devices), C(api_key), C(environment)).
    type: dict
    required: true
  presets:
    description: The named presets (the role's C(llama_server_presets)).
    type: dict
    default: {}
  engine:
    description: Path of the C(llama-server) binary on the target.
    type: str
    default: ""
  python:
    description: The Python interpreter on the target that runs the plan and apply modules (the planning venv).
    type: str
    default: ""
  home:
    description: The service account's home; the instance lives in C(<home>/instances/<name>).
    type: str
    default: /var/lib/llamafleet
  models_dir:
    description: Where the role puts downloaded models; searched first for model file names.
    type: str
    default: /var/lib/llamafleet/models
  model_dirs:
    description: Further directories searched for model file names.
    type: list
    elements: str
    default: []
  config_dir:
    description: Root-only configuration directory (planning state files).
    type: str
    default: /etc/llamafleet
  credentials_dir:
    description: Root-only directory of the API key files.
    type: str
    default: /etc/llamafleet/credentials
  plan_cache_dir:
    description: Where the plan module caches the engine's help, version and preflight passes.
    type: str
    default: /var/cache/llamafleet
  user:
    description: The service account.
    type: str
    default: llamafleet
  group:
    description: The service account's group.
    type: str
    default: llamafleet
  environment:
    description:
      - The environment of every instance's service; the instance's own C(environment) is applied over it.
    type: dict
    default: {}
  engine_official:
    description: The engine is an official ggml-org build (its build number is trusted).
    type: bool
    default: false
  allow_open:
    description: Accept a server that listens beyond loopback without an API key.
    type: bool
    default: false
  nvidia:
    description: Give the unit the NVIDIA device rules; C(auto) when the plan saw NVIDIA GPUs.
    type: str
    default: auto
  protect_home:
    description: The unit's C(ProtectHome=).
    type: str
    default: "yes"
  restart_sec:
    description: The unit's C(RestartSec=).
    type: int
    default: 5
  stop_timeout_s:
    description: The unit's C(TimeoutStopSec=).
    type: int
    default: 30
  limit_nofile:
    description: The unit's C(LimitNOFILE=).
    type: int
    default: 65536
  health_timeout_base_s:
    description: Seconds a (re)started instance may take to answer C(/health) 200, before the model's share.
    type: int
    default: 60
  health_timeout_per_gib_s:
    description: Further seconds per GiB of model.
    type: int
    default: 20
  health_listen_timeout_s:
    description: How long nothing may listen after a start before it counts as failed.
    type: int
    default: 30
  health_delay_s:
    description: Seconds between two C(/health) readings.
    type: float
    default: 2.0
  journal_lines:
    description: How many journal lines of a failed start are reported.
    type: int
    default: 40
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
