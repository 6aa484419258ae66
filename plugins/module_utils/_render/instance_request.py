# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an instance asks of the planner, and the small texts the instance step writes beside its service.

Pure. The instance step (``_converge/step.py``) builds its ``llama_server_plan`` options here, for both runtimes,
from the instance and the settings table (``_layout/settings.py``), so an instance is planned one way only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (
    container_name,
    credential_path,
    paths_of,
    unit_name,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import SECRET_PATH

GIB = 1 << 30


def plan_request(name: str, preset: Mapping, environment: Mapping, *, has_key: bool, engine: str,
                 settings: Mapping) -> dict:
    """The ``llama_server_plan`` options of this instance. The key stays out: only the path the engine reads it
    from goes in. ``environment`` is the service's (the settings' with the instance's over it)."""
    paths = paths_of(name, settings)
    preset = {k: v for k, v in preset.items() if k != "API_KEY"}
    if settings.get("metrics") and not str(preset.get("METRICS", "")).strip():
        preset["METRICS"] = "on"  # the role's switch, for the instances whose preset does not say
    request = {
        "bin": engine,
        "home": paths.home_dir,
        "model_dirs": [settings["models_dir"], *settings.get("model_dirs", [])],
        "instance": name,
        "unit": unit_name(name),
        "preset": preset,
        "environment": dict(environment),
        "api_key_file": credential_path(name) if has_key else "",
        "engine_official": settings["engine_official"],
        "cache_dir": paths.plan_cache,
        "state_file": paths.state_file,
    }
    if settings["runtime"] == "compose":
        # The engine's help comes from the image that will run, its own container is neither a port conflict nor
        # used RAM, and the key is read from the compose secret's path.
        request.update(
            bin=engine or settings["image_binary"],
            unit="",
            container=container_name(name),
            engine_image=settings["image"],
            docker_cli=settings["docker_cli"],
            docker_host=settings["docker_host"],
            api_key_file=SECRET_PATH if has_key else "",
        )
    return request


def state_content(facts: Mapping, placement: Mapping | None = None) -> str:
    """The planning state file of a verified instance: the free RAM its plan used, and for a placed replica its
    placement's record (the judge finds the fleet's replicas by it). As the role wrote it before (to_nice_json), so
    an upgrade leaves a hand-placed instance's file as it is."""
    state: dict = {"ram_avail_mib": int(facts.get("ram_avail_mib") or 0)}
    if placement:
        state["placement"] = dict(placement)
    return json.dumps(state, indent=4) + "\n"


def health_timeout_s(model_bytes: int, base_s: int, per_gib_s: int) -> int:
    """How long a (re)started instance may take to answer /health 200: grows with the model."""
    return int(base_s + -(-per_gib_s * max(model_bytes, 0) // GIB))


def credential_content(holds: str, key: str) -> str:
    """A credential file's text: the bare key, or the environment file of an engine without --api-key-file."""
    return f"LLAMA_API_KEY={key}\n" if holds == "env" else f"{key}\n"
