"""The preset an instance runs: its named preset, then its own settings, then its port, host and GPU selection.

Pure; used on the controller by the instance and host actions and by the role's filters. A host's variables are
read by the controller's plugins (``plugin_utils/role_vars.py``), never here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping


class PresetLayerError(ValueError):
    """An instance or preset mapping that cannot be layered, naming what is wrong."""


# Per-instance settings that are preset keys under another name.
INSTANCE_PRESET_KEYS = {"port": "PORT", "host": "HOST", "cuda_visible_devices": "CUDA_VISIBLE_DEVICES"}
# Keys a preset version leaves out: where an instance runs (its own port, address and cards), and the secrets.
_NOT_VERSIONED = (*INSTANCE_PRESET_KEYS.values(), "API_KEY", "EXTERNAL_KEY")


def merge_preset(base, *layers, only: frozenset | None = None) -> dict:
    """Layer preset mappings, later layers winning; keys upper-cased (Loki keys are case-insensitive).

    ``None`` layers are skipped, so optional per-instance settings can be passed as they are. With ``only`` (upper-cased
    names), every layer is checked alike but only those keys are kept, and no other value is read: on the controller
    a value of a host's variables is rendered when it is read.
    """
    merged: dict = {}
    for position, layer in enumerate((base, *layers)):
        if layer is None:
            continue
        if not isinstance(layer, Mapping):
            raise PresetLayerError(f"merge_preset: layer {position} is not a mapping of preset keys")
        for key in layer:
            name = str(key).strip().upper()
            if not name:
                raise PresetLayerError(f"merge_preset: layer {position} has an empty key")
            if only is None or name in only:
                merged[name] = layer[key]
    return merged


def named_preset(presets: Mapping, preset_name: str, owner: str):
    """The preset of that name ({} for none), or PresetLayerError naming ``owner`` and the known names."""
    if preset_name and preset_name not in presets:
        known = ", ".join(sorted(map(str, presets))) or "none defined"
        raise PresetLayerError(f"{owner}: preset {preset_name!r} is not in llama_server_presets (known: {known})")
    return presets[preset_name] if preset_name else {}


def instance_preset(instance, presets, only: frozenset | None = None) -> dict:
    """The preset an instance runs: its named preset, then its ``settings``, then port/host/GPU selection.

    Keys are upper-cased; an API_KEY stays in the result (the caller moves it to a credential file). ``only``: as
    merge_preset's.
    """
    if not isinstance(instance, Mapping):
        raise PresetLayerError("instance_preset: the input must be an instance mapping")
    presets = presets or {}
    if not isinstance(presets, Mapping):
        raise PresetLayerError("instance_preset: presets must be a mapping of preset name to preset")
    base = named_preset(presets, instance.get("preset") or "", f"instance {instance.get('name', '?')}")
    specials = {key: instance[option] for option, key in INSTANCE_PRESET_KEYS.items()
                if instance.get(option) is not None and instance.get(option) != ""}
    return merge_preset(base, instance.get("settings"), specials, only=only)


def preset_and_key(instance, presets) -> tuple[dict, str]:
    """The instance's layered preset without any secret, and its key: the instance's ``api_key``, else the preset's
    ``API_KEY`` ("" for none). The key only ever travels apart, to root-only credential files."""
    preset = instance_preset(instance, presets)
    key = _key(instance, preset)
    # EXTERNAL_KEY is a remote API's key, never read at launch: it stays on the controller too.
    return {name: value for name, value in preset.items() if name not in ("API_KEY", "EXTERNAL_KEY")}, key


_KEY_NAMES = frozenset({"API_KEY"})


def instance_key(instance, presets) -> str:
    """preset_and_key's key alone, refused alike, reading no other value of the preset: the gateway needs every
    instance's key of the whole fleet, and nothing else of its preset."""
    return _key(instance, instance_preset(instance, presets, only=_KEY_NAMES))


def _key(instance, preset: Mapping) -> str:
    return str(instance.get("api_key") or preset.get("API_KEY") or "").strip()


def preset_version(preset: Mapping) -> str:
    """A short digest of what an instance's layered preset serves and how (12 hex digits): the same on every host
    and port that runs it, so a scrape label tells which hosts run which version during a rollout. Leaves out the
    placement keys and the secrets (no digest of a key ever leaves the controller)."""
    kept = {str(key).strip().upper(): "" if value is None else str(value) for key, value in preset.items()}
    kept = {key: value for key, value in kept.items() if key not in _NOT_VERSIONED}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:12]
