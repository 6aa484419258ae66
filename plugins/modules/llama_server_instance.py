#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The code is the action plugin plugins/action/llama_server_instance.py; this file holds its documentation,
# which is also its argument spec (the action reads the options below, so they are declared once).

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_instance
short_description: Plan, render and apply one llama-server instance as a systemd or compose service
version_added: "0.2.0"
description:
  - The one step of the C(llamafleet.llamacpp.llama_server) role per instance. On the controller it layers the
    instance's preset (its named preset, then its C(settings), then its port, host and GPU selection) and takes
    the API key out of it.
  - It then makes one module run on the target, C(llamafleet.llamacpp.llama_server_apply), which plans the instance
    (probes, the typed preset, the engine's own parser as preflight), renders its files (a hardened systemd unit,
    or a compose file with O(settings.runtime=compose)), restarts or recreates it only when what runs differs
    from the plan, waits for C(/health), verifies C(/props) and rolls back on failure.
  - An instance in state C(absent) is stopped and every file it had is removed.
  - An instance in state C(stopped) is stopped and kept from starting at boot; its files stay, so it starts as it
    was once it is C(present) again.
  - Returns the instance's report row (RV(report)), built from what runs on the host.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.instance_settings
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
options:
  instance:
    description:
      - The instance, as an item of the role's C(llama_server_instances) (C(name), C(state), C(preset),
        C(settings), C(port), C(host), C(cuda_visible_devices), C(api_key), C(environment)).
    type: dict
    required: true
  presets:
    description: The named presets (the role's C(llama_server_presets)).
    type: dict
    default: {}
  engine:
    description:
      - Path of the C(llama-server) binary on the target; with the compose runtime its path inside the image
        (default O(settings.image_binary)).
    type: str
    default: ""
  venv:
    description:
      - The planning venv on the target (C(gguf), C(nvidia-ml-py)); its interpreter runs the module. Empty for the
        host's own interpreter.
    type: str
    default: ""
  pending:
    description:
      - Why the instance cannot be planned yet (check mode on a host where the engine, the planning runtime or a
        model is not installed). When set, nothing runs and the row says C(pending).
    type: str
    default: ""
notes:
  - The API key (C(api_key) of O(instance), or the preset's C(API_KEY)) goes only into root-only credential files on
    the target. It is never in the unit, the compose file, the command line, the result or the log.
seealso:
  - module: llamafleet.llamacpp.llama_server_apply
  - module: llamafleet.llamacpp.llama_server_plan
attributes:
  check_mode:
    details: The module takes the same decisions and changes nothing; the row says C(previewed).
  diff_mode:
    support: full
    details: The unit or compose file's diff.
"""

EXAMPLES = r"""
- name: Deploy one instance
  llamafleet.llamacpp.llama_server_instance:
    instance: {name: main, preset: small, port: 8080, api_key: "{{ vault_llama_key }}"}
    presets: {small: {MODEL: gemma-3-270m-q4_k_m.gguf, CTX: 4096}}
    engine: /opt/llamafleet/engines/b11434/bin/llama-server
    venv: /opt/llamafleet/venv
  register: deployed
"""

RETURN = r"""
report:
  description:
    - The instance's report row. C(state) is C(deployed), C(previewed), C(external), C(pending), C(stopped),
      C(absent) or C(failed);
      C(ctx) is the context the running engine reports (per slot, times the slots), C(pid), C(health) and
      C(build) are read from the running engine, C(reasons) say why it was (or would be) restarted.
  returned: always
  type: dict
plan:
  description: What the plan decided (argv, env, notes, decisions, facts), without the key.
  returned: when planned
  type: dict
applied:
  description: The rest of C(llamafleet.llamacpp.llama_server_apply)'s result (restarted, reasons, health, ...).
  returned: always
  type: dict
"""
