# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one systemd instance asks of the target: the plan request, the open-server guard, the apply request.

Pure. The instance action (controller) and the host judge (``llama_server_host``, on the target) build the same
requests from the same role settings, so an instance is planned, rendered and judged one way only. ``settings``
is the role's per-instance settings as the ``llama_server_instance`` options hold them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    SECRET_PATH,
    container_name,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import (
    InstancePaths,
    InstanceSettings,
    RenderedInstance,
    credential_content,
    health_timeout_s,
    instance_paths,
    key_file_for,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import unit_name

# The role settings (llama_server_instance options) the unit's content depends on.
_UNIT_SETTINGS = ("user", "group", "home", "config_dir", "credentials_dir", "nvidia", "protect_home",
                  "restart_sec", "stop_timeout_s", "limit_nofile")


def unit_settings(settings: Mapping) -> InstanceSettings:
    return InstanceSettings(**{name: settings[name] for name in _UNIT_SETTINGS if name in settings})


def service_environment(settings: Mapping, instance: Mapping) -> dict:
    """The role's environment, then the instance's own (which wins)."""
    return {**(settings.get("environment") or {}), **(instance.get("environment") or {})}


def plan_request(name: str, instance: Mapping, preset: Mapping, key: str, settings: Mapping) -> dict:
    """The ``llama_server_plan`` options for this instance (the key stays out: only its file's path goes in)."""
    paths = instance_paths(name, unit_settings(settings))
    return {
        "bin": settings["engine"],
        "home": paths.home_dir,
        "model_dirs": [settings["models_dir"], *settings.get("model_dirs", [])],
        "instance": name,
        "unit": unit_name(name),
        "preset": {k: v for k, v in preset.items() if k != "API_KEY"},
        "environment": service_environment(settings, instance),
        "api_key_file": key_file_for(name, bool(key)),
        "engine_official": settings["engine_official"],
        "cache_dir": f"{settings['plan_cache_dir']}/{name}",
        "state_file": paths.state_file,
    }


def open_server_refusal(name: str, decisions: Mapping, key: str, allow_open: bool) -> str:
    """Why this plan may not be deployed as it is (a server open beyond loopback without a key); "" when it may."""
    if decisions.get("loopback_only") or key or allow_open:
        return ""
    return (f"instance {name} would listen on {decisions.get('host')} (beyond loopback) without an API key. Give "
            "it an api_key (vault), listen on 127.0.0.1, or set llama_server_allow_open: true to accept an open "
            "server.")


def apply_request(name: str, plan: Mapping, rendered: RenderedInstance, paths: InstancePaths, *, key: str,
                  settings: Mapping) -> dict:
    """The ``llama_server_apply`` options for this planned and rendered instance (the key goes in, no_log)."""
    decisions = plan["decisions"]
    facts = plan.get("facts") or {}
    return {
        "instance": name,
        "unit_content": rendered.unit_content,
        "argv": list(plan["argv"]),
        "environment": dict(rendered.environment),
        "credentials": [{"path": path, "label": label, "content": credential_content(holds, key)}
                        for path, label, holds in rendered.credentials],
        "remove": list(rendered.remove),
        "home_dir": paths.home_dir,
        "user": settings["user"],
        "group": settings["group"],
        "expect": dict(decisions.get("expect") or {}),
        "api_key": key,
        "health_url": decisions["health_url"],
        "health_unix_socket": decisions.get("health_unix_socket") or "",
        "health_timeout_s": health_timeout_s(int(facts.get("model_bytes") or 0),
                                             settings["health_timeout_base_s"], settings["health_timeout_per_gib_s"]),
        "listen_timeout_s": settings["health_listen_timeout_s"],
        "health_delay_s": settings["health_delay_s"],
        "journal_lines": settings["journal_lines"],
        "state_file": paths.state_file,
        "last_good_dir": f"{settings['config_dir']}/last-good",
        "state_content": state_content(facts),
    }


def state_content(facts: Mapping) -> str:
    """The planning state file of a verified instance: the free RAM its plan used. As the role wrote it before
    (to_nice_json), so an upgrade leaves the file as it is."""
    return json.dumps({"ram_avail_mib": int(facts.get("ram_avail_mib") or 0)}, indent=4) + "\n"


# What the report keeps of a plan (the rest stays on the host).
PLAN_REPORT_KEYS = ("argv", "exec_start", "env", "notes", "plan_warnings", "decisions", "facts", "preflight",
                    "unset_environment")


def compose_plan_request(name: str, instance: Mapping, preset: Mapping, key: str, settings: Mapping, *,
                         compose: Mapping) -> dict:
    """The ``llama_server_plan`` options of a compose instance: the engine's help comes from the image that will
    run, its own container is neither a port conflict nor used RAM, and the key is read from the secret's path."""
    request = plan_request(name, instance, preset, key, settings)
    request.update(
        bin="",
        unit="",
        container=container_name(name),
        engine_image=compose["image"],
        docker_cli=compose["docker_cli"],
        api_key_file=SECRET_PATH if key else "",
    )
    if compose.get("docker_host"):
        request["docker_host"] = compose["docker_host"]
    return request
