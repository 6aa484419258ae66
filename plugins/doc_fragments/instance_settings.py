# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings every instance depends on: the C(settings) option of the instance and host actions and of the
target modules. Its suboptions are written from the table in plugins/module_utils/_layout/settings.py by
scripts/generate_settings.py."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  settings:
    description:
      - The settings every instance of the host depends on. The C(llamafleet.llamacpp.llama_server) role passes its
        variables C(llama_server_<name>) here; each one is described in the role's argument specs.
    type: dict
    default: {}
    suboptions:
      # BEGIN generated settings from plugins/module_utils/_layout/settings.py (scripts/generate_settings.py)
      runtime:
        description:
          - C(systemd) (a hardened unit per instance) or C(compose) (a service of the host's compose project).
        type: str
        choices: [systemd, compose]
        default: systemd
      home:
        description:
          - The service account's home; an instance lives in C(<home>/instances/<name>).
        type: str
        default: /var/lib/llamafleet
      models_dir:
        description:
          - Where the role puts downloaded models; searched first for model file names.
        type: str
        default: /var/lib/llamafleet/models
      model_dirs:
        description:
          - Further directories searched for model file names.
        type: list
        elements: str
        default: []
      config_dir:
        description:
          - Root-owned configuration (planning state files, the last verified copies).
        type: str
        default: /etc/llamafleet
      credentials_dir:
        description:
          - Root-only directory of the API key files.
        type: str
        default: /etc/llamafleet/credentials
      plan_cache_dir:
        description:
          - Where the planner caches the engine's help, version and preflight passes.
        type: str
        default: /var/cache/llamafleet
      user:
        description:
          - The service account.
        type: str
        default: llamafleet
      group:
        description:
          - The service account's group.
        type: str
        default: llamafleet
      environment:
        description:
          - The environment of every instance's service; an instance's own C(environment) goes over it.
        type: dict
        default: {}
      engine_official:
        description:
          - The engine is an official ggml-org build (its build number is trusted).
        type: bool
        default: false
      allow_open:
        description:
          - Accept a server that listens beyond loopback without an API key.
        type: bool
        default: false
      metrics:
        description:
          - Serve Prometheus metrics (C(--metrics)) from every instance whose preset does not set C(METRICS).
        type: bool
        default: false
      nvidia:
        description:
          - The unit's NVIDIA device rules, and a compose service's GPU reservation. C(auto) when the plan saw NVIDIA
            GPUs; a boolean forces them on or off.
        type: raw
        default: auto
      protect_home:
        description:
          - The unit's C(ProtectHome=).
        type: str
        choices: ["yes", read-only, tmpfs]
        default: "yes"
      restart_sec:
        description:
          - The unit's C(RestartSec=). From 0 to 3600.
        type: int
        default: 5
      stop_timeout_s:
        description:
          - The unit's C(TimeoutStopSec=), and a container's stop grace period. From 1 to 3600.
        type: int
        default: 30
      limit_nofile:
        description:
          - The unit's C(LimitNOFILE=). From 1024 to 1048576.
        type: int
        default: 65536
      health_timeout_base_s:
        description:
          - Seconds a (re)started instance may take to answer C(/health) 200, before the model's share. From 1 to 86400.
        type: int
        default: 60
      health_timeout_per_gib_s:
        description:
          - Further seconds per GiB of model. From 0 to 3600.
        type: int
        default: 20
      health_listen_timeout_s:
        description:
          - How long nothing may listen after a start before it counts as failed. From 1 to 3600.
        type: int
        default: 30
      health_delay_s:
        description:
          - Seconds between two C(/health) readings. From 0 to 60.
        type: float
        default: 2.0
      journal_lines:
        description:
          - How many lines of a failed engine's journal (or container log) are reported. From 1 to 10000.
        type: int
        default: 40
      image:
        description:
          - Compose. The image whose entrypoint is C(llama-server).
        type: str
        default: ""
      image_binary:
        description:
          - Compose. The engine's path inside the image.
        type: str
        default: /app/llama-server
      image_pull:
        description:
          - Compose. When the role pulls the image; C(always) leaves a host never current for the judge.
        type: str
        choices: [missing, always, never]
        default: missing
      docker_cli:
        description:
          - Compose. The docker CLI on the host.
        type: str
        default: docker
      docker_host:
        description:
          - Compose. The Docker daemon (C(DOCKER_HOST)); empty for the CLI's default.
        type: str
        default: ""
      docker_config:
        description:
          - Compose. C(DOCKER_CONFIG) of the docker CLI (where its compose plugin is); empty for the default.
        type: str
        default: ""
      compose_project:
        description:
          - Compose. The project of the host's instances.
        type: str
        default: llamafleet
      compose_dir:
        description:
          - Compose. The project's directory, one C(<instance>.yaml) per instance.
        type: str
        default: /etc/llamafleet/compose
      compose_health_command:
        description:
          - Compose. The container's health check program and options; the health URL is appended.
        type: list
        elements: str
        default: [curl, --fail, --silent, --show-error, --output, /dev/null, --max-time, "4"]
      compose_log_lines:
        description:
          - Compose. Lines of a failed container's log that are reported. From 1 to 10000.
        type: int
        default: 40
      compose_nofile:
        description:
          - Compose. The container's open-files limit; 0 keeps the daemon's. From 0 to 1048576.
        type: int
        default: 0
      # END generated settings
"""
