# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings machinery of both roles, and the settings every instance depends on: the one table they are declared in.

Pure. A table is a role's settings (``settings_table``), each one the role variable ``<role prefix><name>`` with its
type, default, accepted form or range and documentation; ``_inputs/settings_check.py`` checks values against it.
This table is role ``llama_server``'s; the gateway's is ``_gateway/settings.py``. The instance action, the host
action and the target modules (``llama_server_apply``, ``llama_server_judge``) take these settings as one
``settings`` option whose argument spec is built here. The role passes its variables ``llama_server_<name>`` (one
mapping, ``_llama_server_settings`` in its vars). Its defaults, its argument specs, that mapping and the
``instance_settings`` doc fragment are written from this table by ``scripts/generate_settings.py`` (a unit test
fails when they are stale): adding a setting is one row here, then that script.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

ROLE_PREFIX = "llama_server_"


@dataclass(frozen=True)
class Setting:
    name: str
    type: str
    default: object
    elements: str = ""
    choices: tuple[str, ...] = ()
    # The role's default when it derives from another of its variables (a Jinja expression); None = ``default``.
    role_default: str | None = None
    # What the value must look like beyond its type: a form of _inputs/settings_check.py ("path", "path or empty",
    # "account", "address", "keys", ...); "" = its type and choices say it all.
    form: str = ""
    bounds: tuple[float, float] | None = None  # the range of a number, both ends included
    # Never logged nor shown in a message; a module takes it as an option of its own (no_log), not in ``settings``.
    secret: bool = False
    # The module option's description (the doc fragment): one paragraph, or a tuple of them.
    doc: str | tuple[str, ...] = ""
    # The role variable's description (its argument specs) where it says more than ``doc``; "" = ``doc``.
    role_doc: str | tuple[str, ...] = ""
    role_prefix: str = ""  # the table's (settings_table)

    @property
    def role_variable(self) -> str:
        return self.role_prefix + self.name

    def spec(self) -> dict:
        entry: dict = {"type": self.type, "default": list(self.default) if isinstance(self.default, tuple)
                       else dict(self.default) if isinstance(self.default, dict) else self.default}
        if self.elements:
            entry["elements"] = self.elements
        if self.choices:
            entry["choices"] = list(self.choices)
        if self.secret:
            entry["no_log"] = True
        return entry


def settings_table(role_prefix: str, *settings: Setting) -> tuple[Setting, ...]:
    """A role's settings, each one its variable ``<role_prefix><name>``."""
    return tuple(replace(setting, role_prefix=role_prefix) for setting in settings)


def paragraphs(doc: str | tuple[str, ...]) -> list[str]:
    return [doc] if isinstance(doc, str) else list(doc)


COMPOSE_HEALTH_COMMAND = ("curl", "--fail", "--silent", "--show-error", "--output", "/dev/null", "--max-time", "4")

SETTINGS: tuple[Setting, ...] = settings_table(
    ROLE_PREFIX,
    Setting("runtime", "str", "systemd", choices=("systemd", "compose"),
            doc="C(systemd) (a hardened unit per instance) or C(compose) (a service of the host's compose project).",
            role_doc="How instances run. C(systemd) renders a hardened unit per instance; C(compose) a Docker "
                     "Compose service per instance (needs the docker CLI with the compose v2 plugin, 2.18 or later, "
                     "on the host)."),
    # Where things are.
    Setting("home", "str", "/var/lib/llamafleet", form="path",
            doc="The service account's home; an instance lives in C(<home>/instances/<name>).",
            role_doc="Home of the service user. Instance directories (slot files) are C(<home>/instances/<name>), "
                     "the only place the services may write."),
    Setting("models_dir", "str", "/var/lib/llamafleet/models", role_default="{{ llama_server_home }}/models",
            form="path",
            doc="Where the role puts downloaded models; searched first for model file names.",
            role_doc="Where O(llama_server_models) are downloaded; searched first for relative C(MODEL) names."),
    Setting("model_dirs", "list", (), elements="str", form="path",
            doc="Further directories searched for model file names.",
            role_doc="Further directories searched for C(MODEL), C(MMPROJ) and C(MODEL_DRAFT) names (readable by the "
                     "service user)."),
    Setting("config_dir", "str", "/etc/llamafleet", form="path",
            doc="Root-owned configuration (planning state files, the last verified copies).",
            role_doc="Root-owned configuration; C(state/<name>.json) keeps the free RAM each plan used (stable "
                     "plans)."),
    Setting("credentials_dir", "str", "/etc/llamafleet/credentials",
            role_default="{{ llama_server_config_dir }}/credentials", form="path",
            doc="Root-only directory of the API key files.",
            role_doc="Root-only (0700) directory of the API key files (C(<name>.key)) and C(LLAMA_API_KEY) "
                     "environment files (C(<name>.env))."),
    Setting("plan_cache_dir", "str", "/var/cache/llamafleet", form="path",
            doc="Where the planner caches the engine's help, version and preflight passes.",
            role_doc="Where the planner caches the engine's C(--help)/C(--version) texts (per instance), so an "
                     "unchanged engine is not executed again."),
    Setting("user", "str", "llamafleet", form="account",
            doc="The service account.",
            role_doc="System user the services run as (created)."),
    Setting("group", "str", "llamafleet", form="account",
            doc="The service account's group.",
            role_doc="Group of O(llama_server_user) (created); it can read the models."),
    # What every instance gets.
    Setting("environment", "dict", {}, form="environment",
            doc="The environment of every instance's service; an instance's own C(environment) goes over it.",
            role_doc="Environment variables of every instance's service (C(Environment=) lines). The planner reads "
                     "the C(LLAMA_ARG_*), C(GGML_*) and CUDA ones; the plan's own variables win over them."),
    Setting("engine_official", "bool", False,
            doc="The engine is an official ggml-org build (its build number is trusted).",
            role_doc="The engine is an official ggml-org release build; only then is its build number trusted by the "
                     "planner."),
    Setting("allow_open", "bool", False,
            doc="Accept a server that listens beyond loopback without an API key.",
            role_doc="Accept instances that listen beyond loopback without an API key. Without it such an instance "
                     "fails before anything is changed."),
    Setting("metrics", "bool", False,
            doc="Serve Prometheus metrics (C(--metrics)) from every instance whose preset does not set C(METRICS).",
            role_doc=("Serve Prometheus metrics at C(/metrics) (the engine's C(--metrics)) from every instance whose "
                      "preset does not set C(METRICS) itself. llama.cpp keeps C(/metrics) behind the instance's API "
                      "key.",
                      "The deploy playbook writes the scrape targets when C(llama_fleet_metrics_targets_path) is "
                      "set.")),
    # The systemd unit (nvidia also decides a compose service's GPU reservation).
    Setting("nvidia", "raw", "auto", form="auto or switch",
            doc="The unit's NVIDIA device rules, and a compose service's GPU reservation. C(auto) when the plan saw "
                "NVIDIA GPUs; a boolean forces them on or off.",
            role_doc=("Unit settings for NVIDIA GPUs (C(PrivateDevices=no), C(DeviceAllow=char-nvidia*), no "
                      "C(MemoryDenyWriteExecute)). C(auto) = when the plan saw NVIDIA GPUs; a boolean forces them on "
                      "or off.",
                      "With O(llama_server_runtime=compose) the same setting decides the service's NVIDIA GPU "
                      "reservation (C(deploy.resources.reservations.devices)).")),
    Setting("protect_home", "str", "yes", choices=("yes", "read-only", "tmpfs"),
            doc="The unit's C(ProtectHome=).",
            role_doc="C(ProtectHome=) of the units; C(read-only) when models live under C(/home)."),
    Setting("restart_sec", "int", 5, bounds=(0, 3600),
            doc="The unit's C(RestartSec=). From 0 to 3600.",
            role_doc="C(RestartSec=) (the services restart on failure, at most 5 times in 5 minutes). From 0 to "
                     "3600."),
    # 0 would turn systemd's stop timeout off: a stuck engine would hold a restart forever.
    Setting("stop_timeout_s", "int", 30, bounds=(1, 3600),
            doc="The unit's C(TimeoutStopSec=), and a container's stop grace period. From 1 to 3600.",
            role_doc="C(TimeoutStopSec=); the engine gets C(SIGINT) and finishes its requests. From 1 to 3600."),
    Setting("limit_nofile", "int", 65536, bounds=(1024, 1048576),
            doc="The unit's C(LimitNOFILE=). From 1024 to 1048576.",
            role_doc="C(LimitNOFILE=) (one descriptor per client connection). From 1024 to 1048576."),
    # The wait after a (re)start, and what a failure quotes.
    Setting("health_timeout_base_s", "int", 60, bounds=(1, 86400),
            doc="Seconds a (re)started instance may take to answer C(/health) 200, before the model's share. From 1 "
                "to 86400.",
            role_doc="Seconds a (re)started instance has to answer C(/health) 200, plus "
                     "O(llama_server_health_timeout_per_gib_s) per GiB of model. From 1 to 86400."),
    Setting("health_timeout_per_gib_s", "int", 20, bounds=(0, 3600),
            doc="Further seconds per GiB of model. From 0 to 3600.",
            role_doc="Extra health-wait seconds per GiB of model files (loading time). From 0 to 3600."),
    Setting("health_listen_timeout_s", "int", 30, bounds=(1, 3600),
            doc="How long nothing may listen after a start before it counts as failed. From 1 to 3600.",
            role_doc="Give up earlier when nothing listens on the port for this long (the engine exited or "
                     "crash-loops). Recent engines listen at once and answer 503 while loading; for an engine that "
                     "opens its port only once the model is loaded, set it to the loading time. From 1 to 3600."),
    Setting("health_delay_s", "float", 2.0, bounds=(0, 60),
            doc="Seconds between two C(/health) readings. From 0 to 60.",
            role_doc="Seconds between two C(/health) requests. From 0 to 60."),
    Setting("journal_lines", "int", 40, bounds=(1, 10000),
            doc="How many lines of a failed engine's journal (or container log) are reported. From 1 to 10000.",
            role_doc="Journal lines of a failed instance shown in the failure message. From 1 to 10000."),
    # The compose runtime.
    Setting("image", "str", "", form="word or empty",
            doc="Compose. The image whose entrypoint is C(llama-server).",
            role_doc="Compose runtime. The image whose entrypoint is C(llama-server), e.g. "
                     "C(ghcr.io/ggml-org/llama.cpp:server-cuda). Required with O(llama_server_runtime=compose)."),
    Setting("image_binary", "str", "/app/llama-server", form="path",
            doc="Compose. The engine's path inside the image.",
            role_doc="Compose runtime. The engine's path inside the image (the first word of the planned argv, "
                     "dropped from the service's command)."),
    Setting("image_pull", "str", "missing", choices=("missing", "always", "never"),
            doc="Compose. When the role pulls the image; C(always) leaves a host never current for the judge.",
            role_doc="Compose runtime. When to C(docker pull) the image; C(never) for images loaded by other means."),
    Setting("docker_cli", "str", "docker", form="command",
            doc="Compose. The docker CLI on the host.",
            role_doc="Compose runtime. The docker CLI on the host."),
    Setting("docker_host", "str", "", form="word or empty",
            doc="Compose. The Docker daemon (C(DOCKER_HOST)); empty for the CLI's default.",
            role_doc="Compose runtime. The Docker daemon (C(DOCKER_HOST)); empty for the CLI's default."),
    Setting("docker_config", "str", "", form="path or empty",
            doc="Compose. C(DOCKER_CONFIG) of the docker CLI (where its compose plugin is); empty for the default.",
            role_doc="Compose runtime. C(DOCKER_CONFIG) for the docker CLI, for a compose plugin installed in its "
                     "C(cli-plugins/) directory; empty for the CLI's default places."),
    Setting("compose_project", "str", "llamafleet", form="project",
            doc="Compose. The project of the host's instances.",
            role_doc="Compose runtime. The project name of the host's instances (lower-case letters, digits, C(_), "
                     "C(-))."),
    Setting("compose_dir", "str", "/etc/llamafleet/compose", role_default="{{ llama_server_config_dir }}/compose",
            form="path",
            doc="Compose. The project's directory, one C(<instance>.yaml) per instance.",
            role_doc="Compose runtime. The project directory, holding one C(<instance>.yaml) per instance."),
    Setting("compose_health_command", "list", COMPOSE_HEALTH_COMMAND, elements="str", form="command",
            doc="Compose. The container's health check program and options; the health URL is appended.",
            role_doc="Compose runtime. The program and options of the container's health check; the instance's "
                     "C(/health) URL is appended. ggml-org's images carry C(curl)."),
    Setting("compose_log_lines", "int", 40, bounds=(1, 10000),
            doc="Compose. Lines of a failed container's log that are reported. From 1 to 10000.",
            role_doc="Compose runtime. Lines of C(docker logs) shown when an instance fails. From 1 to 10000."),
    # 0: the image's own limit.
    Setting("compose_nofile", "int", 0, bounds=(0, 1048576),
            doc="Compose. The container's open-files limit; 0 keeps the daemon's. From 0 to 1048576.",
            role_doc="Compose runtime. The containers' open-files limit; C(0) keeps the Docker daemon's own "
                     "(containers inherit it). A value above the daemon's hard limit keeps the container from "
                     "starting. From 0 to 1048576."),
)

BY_NAME = {setting.name: setting for setting in SETTINGS}


def settings_spec(table: tuple[Setting, ...] = SETTINGS) -> dict:
    """The ``settings`` option: a dict whose suboptions are the table's settings but the secret ones (defaults filled
    in by Ansible)."""
    return {"type": "dict", "default": {}, "options": {s.name: s.spec() for s in table if not s.secret}}


def defaults(table: tuple[Setting, ...] = SETTINGS) -> dict:
    """Every setting at its default (a module or test given no settings); a fresh copy each time."""
    return {setting.name: setting.spec()["default"] for setting in table}
