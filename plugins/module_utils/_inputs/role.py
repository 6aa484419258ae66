# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The llama_server role's inputs as a whole, checked on the controller before any host is read or changed.

Pure. The host judge (``llama_server_host``, the role's first step) runs ``input_errors`` and fails with every
message; the filters ``instances_in_state`` and ``model_files`` are the same functions. Each instance and each
setting is checked by the same functions the instance action and the modules call (instance.py,
settings_check.py); what is checked here is the role's alone: the runtime, the engine and the models.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs import grammar
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import instances_errors
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.settings_check import settings_errors


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


def instances_stopped(instances) -> list:
    """The instances in their order, each present one turned stopped (the others kept as they are): a cordoned
    host's hand-placed instances when its setting says stop."""
    present = [id(instance) for instance in instances_in_state(instances, "present")]  # also checks the input
    return [{**instance, "state": "stopped"} if id(instance) in present else instance for instance in instances]


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
        if not name or "/" in name or name in (".", "..") or grammar.path_problem("/" + name):
            raise RoleInputError(f"model_files: model {position} ({url}) gives no usable file name ({name!r}); set "
                                 "its name: letters, digits and . _ + @ ~ , : = % - (no / or blank)")
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

    ``values``: the instance settings (settings_check), instances, presets, engine_bin, engine_archive_url,
    engine_archive_checksum, models, models_dir.
    """
    errors = _runtime_errors(values) + settings_errors(values)
    instances = values.get("instances") or []
    if not _is_list(instances) or not all(isinstance(i, Mapping) for i in instances):
        return [*errors, "llama_server_instances must be a list of instances (mappings with a name)"]
    presets = values.get("presets") or {}
    if not isinstance(presets, Mapping):
        return [*errors, "llama_server_presets must be a mapping of preset names to presets"]
    errors += instances_errors(list(instances), presets)
    present = instances_in_state(instances, "present")
    if present and values["runtime"] == "systemd":
        errors += _engine_errors(values)
    try:
        model_files(values.get("models") or [], str(values.get("models_dir") or "/"))
    except RoleInputError as err:
        errors.append(str(err).replace("model_files: ", "llama_server_models: "))
    return errors
