"""Filters of the llama_server role: the instances it runs, the presets they run, the files and paths it uses.

They keep the role's YAML free of preset layering, name rules and path spelling: each calls the one Python
function that everything else calls too.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs import role as role_inputs
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout import paths
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import preset_layers

# The paths the role's tasks write or read, by name: each is a function of one directory in _layout/paths.py.
LAYOUT_PATHS = {
    "runtime_marker": paths.runtime_marker,
    "venv_python": paths.venv_python,
    "venv_wheels_dir": paths.venv_wheels_dir,
    "engine_marker": paths.engine_marker,
    "engine_downloads_dir": paths.engine_downloads_dir,
    "model_marker_dir": paths.model_marker_dir,
    "instances_dir": paths.instances_dir,
}


def service_account(settings) -> dict:
    """The service account (user, group, home, shell, comment) and the directories every instance shares, from the
    role's settings (paths.service_account)."""
    try:
        return paths.service_account(settings)
    except (KeyError, TypeError) as err:
        raise AnsibleFilterError(f"service_account: the role's settings lack {err}") from err


def instance_preset(instance, presets) -> dict:
    """The preset an instance runs (preset_layers.instance_preset); an API_KEY stays in the result."""
    try:
        return preset_layers.instance_preset(instance, presets)
    except preset_layers.PresetLayerError as err:
        raise AnsibleFilterError(str(err)) from err


def model_files(models, models_dir: str) -> list:
    """The role's llama_server_models as files (role_inputs.model_files): url, checksum and path."""
    try:
        return role_inputs.model_files(models, models_dir)
    except role_inputs.RoleInputError as err:
        raise AnsibleFilterError(str(err)) from err


def instances_in_state(instances, state: str = "present") -> list:
    """The instances whose ``state`` (default ``present``) is the given one (role_inputs.instances_in_state)."""
    try:
        return role_inputs.instances_in_state(instances, state)
    except role_inputs.RoleInputError as err:
        raise AnsibleFilterError(str(err)) from err


def instances_stopped(instances) -> list:
    """The instances with each present one turned stopped (role_inputs.instances_stopped)."""
    try:
        return role_inputs.instances_stopped(instances)
    except role_inputs.RoleInputError as err:
        raise AnsibleFilterError(str(err)) from err


def layout_path(directory, name: str) -> str:
    """A path of the collection's layout (_layout/paths.py) from ``directory``: its install markers, the venv's
    interpreter and wheels, the engines' downloads, the instances' directory."""
    if name not in LAYOUT_PATHS:
        raise AnsibleFilterError(f"layout_path: {name!r} is not one of {', '.join(sorted(LAYOUT_PATHS))}")
    return LAYOUT_PATHS[name](str(directory))


class FilterModule:
    def filters(self):
        return {
            "instance_preset": instance_preset,
            "instances_in_state": instances_in_state,
            "instances_stopped": instances_stopped,
            "layout_path": layout_path,
            "model_files": model_files,
            "service_account": service_account,
        }
