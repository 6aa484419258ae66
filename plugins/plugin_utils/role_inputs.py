# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The llama_server role's inputs, checked on the controller before any host is read or changed.

Pure. The host judge (``llama_server_host``, the role's first step) runs ``input_errors`` and fails with every
message; the filters ``instances_in_state`` and ``model_files`` are the same functions. A message names the
variable, what it holds and the accepted form.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import effective_port
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import (
    PresetLayerError,
    instance_preset,
)

INSTANCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z")
# The engine reads one key per line and treats ',' and '#' specially.
API_KEY = re.compile(r"^[A-Za-z0-9._~+/=:@-]+\Z")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
COMPOSE_PROJECT = re.compile(r"^[a-z0-9][a-z0-9_-]*\Z")
STATES = ("present", "absent")
IMAGE_PULL = ("missing", "always", "never")


class RoleInputError(ValueError):
    pass


def _is_list(value) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, Mapping))


def instances_in_state(instances, state: str = "present") -> list:
    """The instances whose ``state`` (default ``present``) is the given one, in their order."""
    if not _is_list(instances):
        raise RoleInputError("instances_in_state: the input must be a list of instances")
    selected = []
    for instance in instances:
        if not isinstance(instance, Mapping):
            raise RoleInputError("instances_in_state: every instance must be a mapping")
        if (instance.get("state") or "present") == state:
            selected.append(instance)
    return selected


def model_files(models, models_dir: str) -> list:
    """The role's llama_server_models as files: url, checksum and the path under the models directory.

    The file name is the model's ``name`` when given, else the URL's last path segment (query and fragment cut).
    """
    if not _is_list(models):
        raise RoleInputError("model_files: llama_server_models must be a list of {url, checksum[, name]}")
    files = []
    for position, model in enumerate(models):
        if not isinstance(model, Mapping) or not model.get("url") or not model.get("checksum"):
            raise RoleInputError(f"model_files: model {position} needs a url and a checksum")
        url = str(model["url"])
        name = str(model.get("name") or posixpath.basename(url.split("?", 1)[0].split("#", 1)[0]))
        if not name or "/" in name or name in (".", ".."):
            raise RoleInputError(f"model_files: model {position} ({url}) gives no usable file name; set its name")
        files.append({"url": url, "checksum": str(model["checksum"]), "path": f"{models_dir}/{name}"})
    return files


def _runtime_errors(values: Mapping) -> list[str]:
    runtime, image = values["runtime"], str(values.get("image") or "").strip()
    errors = []
    if runtime not in ("systemd", "compose"):
        errors.append(f"llama_server_runtime must be systemd or compose, not {runtime!r}")
    if runtime == "compose" and (not image or re.search(r"\s", image)):
        errors.append("the compose runtime needs llama_server_image: an image whose entrypoint is llama-server, "
                      f"e.g. ghcr.io/ggml-org/llama.cpp:server-cuda (got {values.get('image')!r})")
    if values.get("image_pull", "missing") not in IMAGE_PULL:
        errors.append(f"llama_server_image_pull must be one of {', '.join(IMAGE_PULL)}, "
                      f"not {values.get('image_pull')!r}")
    if not COMPOSE_PROJECT.match(str(values.get("compose_project", "llamafleet"))):
        errors.append("llama_server_compose_project takes lower-case letters, digits, _ and - (starting with a "
                      f"letter or digit), not {values.get('compose_project')!r}")
    if not posixpath.isabs(str(values.get("compose_dir", "/"))):
        errors.append(f"llama_server_compose_dir must be an absolute path, not {values.get('compose_dir')!r}")
    return errors


def _instance_errors(instances: list, presets: Mapping) -> list[str]:
    errors = []
    names = [str(instance.get("name") or "") for instance in instances]
    bad = [name for name in names if not INSTANCE_NAME.match(name)]
    if bad:
        errors.append("instance names must match [A-Za-z0-9][A-Za-z0-9_.-]* (at most 63 characters; they name the "
                      f"unit llama-server-<name>.service); not: {', '.join(repr(n) for n in bad)}")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        errors.append(f"instance names must be unique; given more than once: {', '.join(twice)}")
    states = [f"{name}: {instance.get('state')!r}" for name, instance in zip(names, instances, strict=True)
              if (instance.get("state") or "present") not in STATES]
    if states:
        errors.append(f"an instance's state is present or absent; not {', '.join(states)}")
    ports: dict[int, str] = {}
    keys = []
    for name, instance in zip(names, instances, strict=True):
        if (instance.get("state") or "present") != "present":
            continue
        try:
            preset = instance_preset(instance, presets)
        except PresetLayerError as err:
            errors.append(str(err))
            continue
        # As the engine will read it (EXTRA_ARGS' --port wins over PORT): "08080" and "8080" are one port.
        port = effective_port(preset)
        if port is not None and port in ports:
            errors.append(f"instances of one host need distinct ports: {ports[port]} and {name} both plan port {port}")
        if port is not None:
            ports.setdefault(port, name)
        keys += [(name, str(value)) for value in (instance.get("api_key"), preset.get("API_KEY")) if value]
    # The key itself is never part of a message.
    for name, key in keys:
        if not API_KEY.match(key):
            errors.append(f"instance {name}: an API key may only hold letters, digits and . _ ~ + / = : @ - (no "
                          "spaces, quotes, commas or '#'): the engine reads one key per line and treats ',' and '#' "
                          "specially")
    return errors


def _environment_errors(environment: Mapping, instances: list) -> list[str]:
    errors = []
    for owner, env in [("llama_server_environment", environment)] + [
        (f"the environment of instance {instance.get('name')}", instance.get("environment") or {})
        for instance in instances
    ]:
        if not isinstance(env, Mapping):
            errors.append(f"{owner} must be a mapping of variable names to values")
            continue
        bad = [str(name) for name in env if not ENV_NAME.match(str(name))]
        if bad:
            errors.append(f"{owner} takes variable names ([A-Za-z_][A-Za-z0-9_]*); not: {', '.join(bad)}")
        if "LLAMA_API_KEY" in env:
            errors.append(f"{owner}: LLAMA_API_KEY is not set this way; give the key as an instance's api_key (it "
                          "then reaches the engine as a file, never in a unit or a compose file)")
    return errors


def _engine_errors(values: Mapping) -> list[str]:
    binary, url = str(values.get("engine_bin") or ""), str(values.get("engine_archive_url") or "")
    if bool(binary) == bool(url):
        return ["set either llama_server_engine_bin (an absolute path of an installed llama-server) or "
                "llama_server_engine_archive_url with llama_server_engine_archive_checksum (e.g. sha256:<hex>), "
                "not both" + ("" if binary else " and not neither")]
    if url and not values.get("engine_archive_checksum"):
        return [f"llama_server_engine_archive_url {url} needs llama_server_engine_archive_checksum "
                "(e.g. sha256:<hex>)"]
    if binary and not posixpath.isabs(binary):
        return [f"llama_server_engine_bin must be an absolute path, not {binary!r}"]
    return []


def input_errors(values: Mapping) -> list[str]:
    """Every problem with the role's inputs; [] when they are usable.

    ``values``: runtime, image, image_pull, compose_project, compose_dir, instances, presets, environment,
    engine_bin, engine_archive_url, engine_archive_checksum, models, models_dir.
    """
    errors = _runtime_errors(values)
    instances = values.get("instances") or []
    if not _is_list(instances) or not all(isinstance(i, Mapping) for i in instances):
        return [*errors, "llama_server_instances must be a list of instances (mappings with a name)"]
    presets = values.get("presets") or {}
    if not isinstance(presets, Mapping):
        return [*errors, "llama_server_presets must be a mapping of preset names to presets"]
    errors += _instance_errors(list(instances), presets)
    errors += _environment_errors(values.get("environment") or {}, list(instances))
    present = instances_in_state(instances, "present")
    if present and values["runtime"] == "systemd":
        errors += _engine_errors(values)
    try:
        model_files(values.get("models") or [], str(values.get("models_dir") or "/"))
    except RoleInputError as err:
        errors.append(str(err).replace("model_files: ", "llama_server_models: "))
    return errors
