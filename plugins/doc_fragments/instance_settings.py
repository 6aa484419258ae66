# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role settings every systemd instance depends on: options shared by llama_server_instance and
llama_server_host (their action plugins read them from here too, so they are declared once)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  presets:
    description: The named presets (the role's C(llama_server_presets)).
    type: dict
    default: {}
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
    description: Give the unit the NVIDIA device rules (the compose service its GPU reservation); C(auto) when the
      plan saw NVIDIA GPUs.
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
"""
