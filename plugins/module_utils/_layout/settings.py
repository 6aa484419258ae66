# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings every instance depends on, with their types and defaults: the one table they are declared in.

Pure. The instance action, the host action, the target modules (``llama_server_apply``, ``llama_server_judge``)
take them as one ``settings`` option whose argument spec is built here. The role passes its variables
``llama_server_<name>`` (one mapping, ``_llama_server_settings`` in its vars), and its defaults, its argument
specs and the ``instance_settings`` doc fragment are held to this table by a unit test, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    # What the value must look like beyond its type (_inputs/settings_check.py): "path", "path or empty",
    # "account", "project", "word", "word or empty", "command", "environment", "auto or switch"; "" = its type and
    # choices say it all.
    form: str = ""
    bounds: tuple[float, float] | None = None  # the range of a number, both ends included

    @property
    def role_variable(self) -> str:
        return ROLE_PREFIX + self.name

    def spec(self) -> dict:
        entry: dict = {"type": self.type, "default": list(self.default) if isinstance(self.default, tuple)
                       else dict(self.default) if isinstance(self.default, dict) else self.default}
        if self.elements:
            entry["elements"] = self.elements
        if self.choices:
            entry["choices"] = list(self.choices)
        return entry


COMPOSE_HEALTH_COMMAND = ("curl", "--fail", "--silent", "--show-error", "--output", "/dev/null", "--max-time", "4")

SETTINGS: tuple[Setting, ...] = (
    Setting("runtime", "str", "systemd", choices=("systemd", "compose")),
    # Where things are.
    Setting("home", "str", "/var/lib/llamafleet", form="path"),
    Setting("models_dir", "str", "/var/lib/llamafleet/models", role_default="{{ llama_server_home }}/models",
            form="path"),
    Setting("model_dirs", "list", (), elements="str", form="path"),
    Setting("config_dir", "str", "/etc/llamafleet", form="path"),
    Setting("credentials_dir", "str", "/etc/llamafleet/credentials",
            role_default="{{ llama_server_config_dir }}/credentials", form="path"),
    Setting("plan_cache_dir", "str", "/var/cache/llamafleet", form="path"),
    Setting("user", "str", "llamafleet", form="account"),
    Setting("group", "str", "llamafleet", form="account"),
    # What every instance gets.
    Setting("environment", "dict", {}, form="environment"),  # spec() hands out a copy
    Setting("engine_official", "bool", False),
    Setting("allow_open", "bool", False),
    Setting("metrics", "bool", False),  # METRICS=on for every instance whose preset does not say
    # The systemd unit (nvidia also decides a compose service's GPU reservation).
    Setting("nvidia", "raw", "auto", form="auto or switch"),
    Setting("protect_home", "str", "yes", choices=("yes", "read-only", "tmpfs")),
    Setting("restart_sec", "int", 5, bounds=(0, 3600)),
    # 0 would turn systemd's stop timeout off: a stuck engine would hold a restart forever.
    Setting("stop_timeout_s", "int", 30, bounds=(1, 3600)),
    Setting("limit_nofile", "int", 65536, bounds=(1024, 1048576)),
    # The wait after a (re)start, and what a failure quotes.
    Setting("health_timeout_base_s", "int", 60, bounds=(1, 86400)),
    Setting("health_timeout_per_gib_s", "int", 20, bounds=(0, 3600)),
    Setting("health_listen_timeout_s", "int", 30, bounds=(1, 3600)),
    Setting("health_delay_s", "float", 2.0, bounds=(0, 60)),
    Setting("journal_lines", "int", 40, bounds=(1, 10000)),
    # The compose runtime.
    Setting("image", "str", "", form="word or empty"),
    Setting("image_binary", "str", "/app/llama-server", form="path"),
    Setting("image_pull", "str", "missing", choices=("missing", "always", "never")),
    Setting("docker_cli", "str", "docker", form="command"),
    Setting("docker_host", "str", "", form="word or empty"),
    Setting("docker_config", "str", "", form="path or empty"),
    Setting("compose_project", "str", "llamafleet", form="project"),
    Setting("compose_dir", "str", "/etc/llamafleet/compose", role_default="{{ llama_server_config_dir }}/compose",
            form="path"),
    Setting("compose_health_command", "list", COMPOSE_HEALTH_COMMAND, elements="str", form="command"),
    Setting("compose_log_lines", "int", 40, bounds=(1, 10000)),
    # 0: the image's own limit.
    Setting("compose_nofile", "int", 0, bounds=(0, 1048576)),
)

BY_NAME = {setting.name: setting for setting in SETTINGS}


def settings_spec() -> dict:
    """The ``settings`` option: a dict whose suboptions are the table (defaults filled in by Ansible)."""
    return {"type": "dict", "default": {}, "options": {s.name: s.spec() for s in SETTINGS}}


def defaults() -> dict:
    """Every setting at its default (a module or test given no settings)."""
    return {name: entry["default"] for name, entry in settings_spec()["options"].items()}
