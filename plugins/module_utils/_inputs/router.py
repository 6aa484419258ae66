# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A router instance's inputs: its ``models`` (each a preset, loaded on demand) and its own flags.

Pure. An instance with ``models`` is a router instance (docs/router.md). Each entry is a preset's name (the model is
then called by it), or a mapping ``{name, preset, settings}``: the model id the clients ask for, the named preset
it starts from, and its own keys over it. The instance's ``port``, ``host``, ``api_key`` and ``environment`` are the
router's; ``models_max``, ``models_autoload`` and ``sleep_idle_seconds`` its own flags. A router instance takes
no ``preset``, ``settings`` or ``cuda_visible_devices`` of its own: each model's preset says how it runs.

The wire form (``router_request``) is what the instance step takes: each model's preset layered, without a key;
the key travels apart, as every instance's does.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import (
    PresetLayerError,
    instance_preset,
    merge_preset,
    named_preset,
    preset_and_key,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import check_model_id

ROUTER_OPTIONS = ("models_max", "models_autoload", "sleep_idle_seconds")
# What a router instance leaves to its models' presets.
NOT_FOR_A_ROUTER = ("preset", "settings", "cuda_visible_devices", "placement")
MAX_MODELS = 64


def is_router(instance) -> bool:
    return isinstance(instance, Mapping) and instance.get("models") is not None


def model_ids(instance: Mapping) -> list[str]:
    """A router instance's model ids as given (a preset's name, or an entry's name), read without its presets."""
    ids = []
    for entry in instance.get("models") or []:
        if isinstance(entry, Mapping):
            ids.append(str(entry.get("name") or entry.get("preset") or ""))
        else:
            ids.append(str(entry))
    return ids


def _entry(owner: str, entry, presets: Mapping) -> tuple[str, dict, str]:
    """(model id, its layered preset, "") or ("", {}, why)."""
    if isinstance(entry, str):
        entry = {"name": entry, "preset": entry}
    if not isinstance(entry, Mapping):
        return "", {}, f"{owner}: each entry of models is a preset's name or a mapping with name, preset, settings"
    unknown = sorted(set(map(str, entry)) - {"name", "preset", "settings"})
    if unknown:
        return "", {}, (f"{owner}: a models entry has unknown key(s) {', '.join(unknown)}; accepted: name, preset, "
                        "settings")
    name = str(entry.get("name") or entry.get("preset") or "")
    try:
        check_model_id(name)
    except PlanError as err:
        return "", {}, f"{owner}: {err}"
    try:
        preset = merge_preset(named_preset(presets, str(entry.get("preset") or ""), f"{owner}: model {name}"),
                              entry.get("settings"))
    except PresetLayerError as err:
        return "", {}, f"{owner}: model {name}: {err}"
    return name, preset, ""


def _whole(value, *, low: int, what: str, owner: str, option: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or (not isinstance(value, int) and not (isinstance(value, str) and value.isdigit())):
        return f"{owner}: {option} {value!r}: accepted: {what}"
    if int(value) < low:
        return f"{owner}: {option} {value!r}: accepted: {what}"
    return ""


def router_errors(instance: Mapping, presets) -> list[str]:
    """What is wrong with a router instance's own fields and its models (each model's preset values are checked by
    the caller, as any preset's)."""
    owner = f"instance {instance.get('name')}"
    presets = presets if isinstance(presets, Mapping) else {}
    errors = [f"{owner}: a router instance (models) takes no {option}: each model's preset says how it runs"
              for option in NOT_FOR_A_ROUTER if instance.get(option) not in (None, "", {}, [])]
    models = instance.get("models")
    if not isinstance(models, list) or not models:
        return [*errors, f"{owner}: models must be a non-empty list of presets' names or mappings {{name, preset, "
                         "settings}}"]
    if len(models) > MAX_MODELS:
        errors.append(f"{owner}: {len(models)} models; a router instance takes at most {MAX_MODELS}")
    names = []
    for entry in models:
        name, _preset, why = _entry(owner, entry, presets)
        if why:
            errors.append(why)
        else:
            names.append(name)
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        errors.append(f"{owner}: model ids must be unique; given more than once: {', '.join(twice)}")
    errors += [why for why in (
        _whole(instance.get("models_max"), low=0, what="a whole number of models, 0 for no limit (allowed only when "
               "all fit together); leave it out to have it chosen from memory", owner=owner, option="models_max"),
        _whole(instance.get("sleep_idle_seconds"), low=1, what="a whole number of seconds, at least 1",
               owner=owner, option="sleep_idle_seconds"),
    ) if why]
    autoload = instance.get("models_autoload")
    if autoload is not None and not isinstance(autoload, bool):
        errors.append(f"{owner}: models_autoload {autoload!r}: accepted: true or false")
    return errors


def model_presets(instance: Mapping, presets) -> dict[str, dict]:
    """{model id: its layered preset, its key still in it}, in the instance's order (router_errors first)."""
    found = {}
    for entry in instance.get("models") or []:
        name, preset, why = _entry(f"instance {instance.get('name')}", entry, presets or {})
        if why:
            raise PresetLayerError(why)
        found[name] = preset
    return found


def router_key(instance: Mapping, presets) -> str:
    """The router's key: the instance's api_key. A model's preset may carry the same API_KEY (a preset shared with
    instances of one model), never another one: a router has one key, which its children inherit."""
    own = str(instance.get("api_key") or "").strip()
    for name, preset in model_presets(instance, presets).items():
        found = str(preset.get("API_KEY") or "").strip()
        if found and found != own:
            raise PresetLayerError(f"instance {instance.get('name')}: model {name}'s preset has an API_KEY that is not "
                                   "the instance's api_key; a router has one key, the instance's api_key, which its "
                                   "children inherit")
    return own


def step_inputs(instance: Mapping, presets) -> tuple[dict, str, dict | None]:
    """What the instance step takes of an instance: (its preset without a key, its key, its router option or None
    for an instance of one model)."""
    if is_router(instance):
        return router_listen_preset(instance), router_key(instance, presets), router_request(instance, presets)
    preset, key = preset_and_key(instance, presets)
    return preset, key, None


def router_request(instance: Mapping, presets) -> dict:
    """The instance step's ``router`` option: each model's preset without a key, and the router's own flags."""
    models = [{"name": name, "preset": {key: value for key, value in preset.items()
                                        if key not in ("API_KEY", "EXTERNAL_KEY")}}
              for name, preset in model_presets(instance, presets).items()]
    request: dict = {"models": models, "autoload": instance.get("models_autoload", True) is not False}
    for option, key in (("models_max", "models_max"), ("sleep_idle_seconds", "sleep_idle_seconds")):
        if instance.get(option) is not None:
            request[key] = int(instance[option])
    return request


def router_listen_preset(instance: Mapping) -> dict:
    """The router's own preset layer: where it listens (the instance's port and host)."""
    return instance_preset({"name": instance.get("name"), **{k: instance.get(k) for k in ("port", "host")}}, {})


def request_errors(router: Mapping) -> list[str]:
    """The step's ``router`` option, as the module alone gets it: ids, unique, numbers."""
    errors = []
    models = router.get("models") if isinstance(router, Mapping) else None
    if not isinstance(models, list) or not models:
        return ["router: models must be a non-empty list of {name, preset}"]
    names = []
    for model in models:
        if not isinstance(model, Mapping) or not isinstance(model.get("preset") or {}, Mapping):
            errors.append("router: each model is a mapping {name, preset}")
            continue
        try:
            check_model_id(model.get("name"))
        except PlanError as err:
            errors.append(f"router: {err}")
        names.append(str(model.get("name")))
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        errors.append(f"router: model ids must be unique; given more than once: {', '.join(twice)}")
    for option, low in (("models_max", 0), ("sleep_idle_seconds", 1)):
        value = router.get(option)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            errors.append(f"router: {option} {value!r}: accepted: a whole number, at least {low}")
    return errors
