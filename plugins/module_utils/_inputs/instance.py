# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One instance's inputs (its name, state, environment, preset and key), checked the same way at every entry
point: the host action for the whole role, the instance action, and the modules on the target.

Pure. A message names the instance and the field, shows the value (never a key's) and the accepted form.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs import grammar, router, secrets
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.settings_check import (
    environment_problem,
    settings_errors,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import effective_port
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import (
    PresetLayerError,
    instance_preset,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import split_args

# stopped: installed, its files kept, its service stopped and not started at boot (a cordoned host's instances).
STATES = ("present", "stopped", "absent")


def name_error(name) -> str:
    text = "" if name is None else str(name)
    if grammar.INSTANCE_NAME.fullmatch(text):
        return ""
    return (f"instance name {text!r}: it names the unit llama-server-<name>.service, the container and the "
            f"instance's files; accepted: {grammar.INSTANCE_NAME_FORM}")


def key_error(owner: str, key) -> str:
    """The key itself is never part of the message."""
    why = secrets.api_key_problem(str(key))
    return f"{owner}: the API key is refused: {why}" if why else ""


def preset_errors(owner: str, preset: Mapping) -> list[str]:
    """A preset's values that no file can hold, its secrets under other names, and secret flags in its EXTRA_ARGS
    (any spelling the engine reads)."""
    errors = []
    for key, value in preset.items():
        # Valid UTF-8 without NUL, at most 64 KiB a value: what a unit line and a compose file can hold.
        why = grammar.text_problem(str(key)) or grammar.text_problem("" if value is None else str(value))
        if why:
            errors.append(f"{owner}: preset key {str(key)!r}: {why}")
        meant = secrets.misspelt_secret_key(str(key))
        if meant:
            errors.append(f"{owner}: preset key {str(key)!r} looks like {meant}, the one name a secret is taken "
                          f"under: write {meant} (or the instance's api_key)")
    for flag in secrets.secret_flags_in(split_args(str(preset.get("EXTRA_ARGS") or ""))):
        errors.append(f"{owner}: EXTRA_ARGS must not carry {flag} in any spelling ({secrets.SECRET_FLAGS[flag]} "
                      "would be in the engine's command line, readable by every user in ps and in the unit "
                      "file); give the API key as the instance's api_key (or API_KEY), which reaches the engine "
                      "as a root-only file")
    return errors


def instance_errors(instance, presets) -> list[str]:
    """Everything wrong with one instance as the role or a module gives it; [] when it can be deployed."""
    if not isinstance(instance, Mapping):
        return ["an instance must be a mapping with a name"]
    errors = [problem for problem in [name_error(instance.get("name"))] if problem]
    owner = f"instance {instance.get('name')}"
    state = instance.get("state") or "present"
    if state not in STATES:
        errors.append(f"{owner}: state {state!r}; accepted: present, stopped or absent")
    problem = environment_problem(instance.get("environment") or {})
    if problem:
        errors.append(f"{owner}: environment: {problem}")
    if state != "present":
        return errors
    if router.is_router(instance):
        return errors + _router_instance_errors(instance, presets)
    try:
        preset = instance_preset(instance, presets)
    except PresetLayerError as err:
        return [*errors, str(err)]
    errors += preset_errors(owner, preset)
    for source in ("api_key", "API_KEY"):
        value = instance.get("api_key") if source == "api_key" else preset.get("API_KEY")
        if value not in (None, "") and (problem := key_error(f"{owner} ({source})", str(value).strip())):
            errors.append(problem)
    return errors


def _router_instance_errors(instance: Mapping, presets) -> list[str]:
    """A router instance's own fields, then each model's preset as any preset's, then its one key."""
    owner = f"instance {instance.get('name')}"
    errors = router.router_errors(instance, presets)
    if errors:
        return errors
    for name, preset in router.model_presets(instance, presets).items():
        errors += preset_errors(f"{owner} (model {name})", preset)
    if errors:
        return errors
    try:
        key = router.router_key(instance, presets)
    except PresetLayerError as err:
        return [str(err)]
    problem = key_error(f"{owner} (api_key)", key) if key else ""
    return [problem] if problem else []


def instances_errors(instances, presets) -> list[str]:
    """Each instance's errors, then what concerns them together: unique names, distinct ports."""
    errors: list[str] = []
    names = [str(instance.get("name")) for instance in instances if isinstance(instance, Mapping)]
    for instance in instances:
        errors += instance_errors(instance, presets)
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        errors.append(f"instance names must be unique; given more than once: {', '.join(twice)}")
    ports: dict[int, str] = {}
    for instance in instances:
        if not isinstance(instance, Mapping) or (instance.get("state") or "present") != "present":
            continue
        try:
            port = effective_port(instance_preset(instance, presets))
        except PresetLayerError:
            continue  # said above
        # As the engine will read it (EXTRA_ARGS' --port wins over PORT): "08080" and "8080" are one port.
        if port is not None and port in ports:
            errors.append(f"instances of one host need distinct ports: {ports[port]} and {instance.get('name')} "
                          f"both plan port {port}")
        elif port is not None:
            ports[port] = str(instance.get("name"))
    return errors


def step_errors(params: Mapping) -> list[str]:
    """What the instance step refuses before it reads or writes anything (``llama_server_apply``'s options, or one
    instance of the judge's): its settings and the instance, by the rules the role's inputs follow."""
    instance = {"name": params.get("name"), "state": params.get("state") or "present",
                "environment": params.get("environment") or {}, "api_key": params.get("api_key") or "",
                "settings": params.get("preset") or {}}
    errors = settings_errors(params.get("settings") or {}) + instance_errors(instance, {})
    if params.get("router") and (instance["state"] == "present"):
        found = router.request_errors(params["router"])
        errors += found or [why for model in params["router"]["models"]
                            for why in preset_errors(f"instance {params.get('name')} (model {model['name']})",
                                                     model.get("preset") or {})]
    return errors


def plan_option_errors(params: Mapping, preset: Mapping) -> list[str]:
    """llama_server_plan's options, as the instance step's are checked: the instance name, the environment, the
    preset's secrets (their names, the key's form, key flags in EXTRA_ARGS) and the paths it reads and writes."""
    errors = [why for why in [name_error(params["instance"])] if why] if params.get("instance") else []
    problem = environment_problem(params.get("environment") or {})
    if problem:
        errors.append(f"environment: {problem}")
    errors += preset_errors("the preset", preset)
    key = str(preset.get("API_KEY") or "").strip()
    if key and (problem := key_error("the preset (API_KEY)", key)):
        errors.append(problem)
    for option in ("home", "slot_dir", "cache_dir", "state_file", "model_dirs"):
        values = params.get(option) or []
        for value in [values] if isinstance(values, str) else values:
            problem = grammar.path_problem(str(value))
            if problem:
                errors.append(f"{option} {str(value)!r}: {problem}; accepted: {grammar.PATH_FORM}")
    return errors
