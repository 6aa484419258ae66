# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's and the deploy playbook's variables that the controller's plugins read from a host's variables.

The pure packages (``_placement``, ``_planner``, ...) take values and know no role variable: their names, and what
a host gets when it does not set one, live here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ansible.errors import AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_bounds
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import (
    DEFAULT_GPU_MARGIN_MIB,
    DEFAULT_RAM_MARGIN_MIB,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import (
    PresetLayerError,
    instance_key,
    preset_and_key,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.templated import templated

DEPLOYMENTS = "llama_fleet_deployments"
HAND_INSTANCES = "llama_server_instances"
PLACED_INSTANCES = "llama_server_placed_instances"
PRESETS = "llama_server_presets"
LABELS = "llama_fleet_labels"
RAM_MARGIN = "llama_fleet_ram_margin_mib"
GPU_MARGIN = "llama_fleet_gpu_margin_mib"
PORT_RANGE = "llama_fleet_port_range"
REPORT = "llama_server_report"  # a host's rows of this run's judge or rollout
CORDONED = "llama_fleet_cordoned"  # a host that takes no replica, and whose replicas move (docs/placement.md)
UNREACHABLE = "llama_fleet_unreachable"  # what the placement does with the replicas of a host the run lost
LEDGER_PATH = "llama_fleet_ledger_path"  # the controller's placement ledger
FLEET_NAME = "llama_fleet_name"  # the name the ledger carries
# What a cordoned host does with its hand-placed instances: keep them running (out of every gateway's rotation), or
# stop them (their files kept); the role's llama_server_stop_instances carries it out.
CORDONED_INSTANCES = "llama_fleet_cordoned_instances"
CORDONED_INSTANCES_CHOICES = ("keep", "stop")
STOP_INSTANCES = "llama_server_stop_instances"
# How many of a model's replicas a rollout may take out of rotation, or start first (_gateway/rollout_bounds.py).
MAX_UNAVAILABLE = "llama_fleet_max_unavailable"
MAX_SURGE = "llama_fleet_max_surge"
BOUND_NAMES = (MAX_UNAVAILABLE, MAX_SURGE)
CORDON_REQUEST = "llama_fleet_cordon"  # the maintenance playbook's hosts to cordon
UNCORDON_REQUEST = "llama_fleet_uncordon"  # and to open again
MAINTENANCE = "llama_fleet_maintenance"  # set by the maintenance playbook
GATEWAY_GROUP = "llama_fleet_gateway_group"  # the inventory group of the fleet's gateways
SERIAL = "llama_fleet_serial"  # the rollout's batch sizes
SUMMARY_PATH = "llama_fleet_summary_path"  # the controller's Markdown summary
METRICS_TARGETS_PATH = "llama_fleet_metrics_targets_path"  # the controller's Prometheus scrape targets
# The deploy playbook's judge play sets it when it places llama_fleet_deployments.
PLACING = "_llama_fleet_placing"
# And this one on the hosts that are also the run's gateways: their judge reads the gateway too.
READ_GATEWAY = "_llama_fleet_read_gateway"

# The roles whose settings table (settings_table) gives the settings their modules take as ``settings``.
SETTINGS_ROLES = ("llama_server", "llama_gateway")


# The settings tables are imported where they are read, not with this module: most of the controller's actions read
# role variables by name only, and Ansible's collection loader compiles a plugin's sources each time a process
# imports them (no bytecode cache).
def settings_table(role: str) -> tuple:
    """A role's settings table (one of SETTINGS_ROLES): each setting the role variable of its name."""
    if role == "llama_gateway":
        from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import (  # noqa: PLC0415
            GATEWAY_SETTINGS,
        )
        return GATEWAY_SETTINGS
    from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import (  # noqa: PLC0415
        SETTINGS,
    )
    return SETTINGS if role == "llama_server" else ()


# The host judge's options (llama_server_host) and the variable of the llama_server role that gives each, when the
# role's judge step has the action read them itself (role_variables); ``settings`` comes from the settings table.
JUDGE_OPTIONS = {
    "instances": "_llama_server_all_instances",
    "presets": PRESETS,
    "engine_bin": "llama_server_engine_bin",
    "engine_archive_url": "llama_server_engine_archive_url",
    "engine_archive_checksum": "llama_server_engine_archive_checksum",
    "engine_dir": "_llama_server_engine_dir",
    "models": "llama_server_models",
    "venv": "llama_server_venv",
    "runtime_manifest": "_llama_server_runtime_manifest",
    "lock_lease_s": "llama_fleet_lock_lease_s",
    "place": PLACING,
    "read_gateway": READ_GATEWAY,
}


def role_settings(templar, variables: Mapping, role: str, cache: dict | None = None) -> dict:
    """The role's ``settings`` mapping from the host's ``variables`` (not templated yet), each variable templated
    by ``templar`` as a task's argument would be, each distinct string once; its secret settings left out (a module
    takes them as options of their own). KeyError naming the role variable when one is not defined (the role defines
    them all: the caller is not in the role)."""
    cache = {} if cache is None else cache
    found = {}
    for setting in settings_table(role):
        if setting.secret:
            continue
        if setting.role_variable not in variables:
            raise KeyError(setting.role_variable)
        found[setting.name] = _templated_variable(templar, variables, setting.role_variable, cache)
    return found


def gateway_variables(templar, variables: Mapping, cache: dict | None = None, *, secrets: bool = True) -> dict:
    """The gateway settings a host sets itself (each ``llama_gateway_<name>`` it defines, templated as role_settings
    does; the secret ones only with ``secrets``), by setting name. Outside the gateway role, whose defaults are not
    read there: _gateway/settings.gateway_settings gives the others their defaults, from the same table."""
    cache = {} if cache is None else cache
    return {setting.name: _templated_variable(templar, variables, setting.role_variable, cache)
            for setting in settings_table("llama_gateway")
            if setting.role_variable in variables and (secrets or not setting.secret)}


class RoleVariableError(ValueError):
    """A role variable that cannot be templated: the message names it and says why."""


def _templated_variable(templar, variables: Mapping, name: str, cache: dict):
    try:
        return templated(templar, variables[name], cache)
    except AnsibleError as err:
        raise RoleVariableError(f"{name}: {err}") from None


def judge_options(templar, variables: Mapping, cache: dict | None = None) -> dict:
    """The host judge's options from the llama_server role's variables on the host (JUDGE_OPTIONS, and ``settings``
    from its table), each variable templated as a task's argument would be, each distinct string once. A variable
    the host does not define gives no option (the module's default); the settings must all be defined (KeyError,
    as role_settings). RoleVariableError names a variable that cannot be templated. ``cache``: as templated's."""
    cache = {} if cache is None else cache
    found = {"settings": role_settings(templar, variables, "llama_server", cache)}
    for option, name in JUDGE_OPTIONS.items():
        if name in variables:
            found[option] = _templated_variable(templar, variables, name, cache)
    return found


def rollout_bounds_of(max_unavailable, max_surge, deployments) -> tuple:
    """The fleet's rollout bounds and each deployment's (``rollout_bounds.read_bounds``, ``deployment_bounds``),
    named as the user sets them; BoundError naming the variable otherwise."""
    fleet = rollout_bounds.read_bounds(max_unavailable, max_surge, names=BOUND_NAMES)
    listed = deployments if isinstance(deployments, list) else []
    return fleet, rollout_bounds.deployment_bounds(listed, fleet, listed_as=DEPLOYMENTS, fleet_names=BOUND_NAMES)


def cordon(variables: Mapping) -> bool | None:
    """A host's ``llama_fleet_cordoned``: True or False, or None when it sets none (the ledger's record then
    speaks). Raises ValueError naming the variable, the value and the accepted form for anything but a boolean
    (Ansible's strict reading: true/false, yes/no, on/off, 1/0)."""
    value = variables.get(CORDONED)
    if value is None:
        return None
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise ValueError(f"{CORDONED}: {value!r} is not a boolean (true or false)") from None


def cordoned_instances(variables: Mapping) -> str:
    """A host's ``llama_fleet_cordoned_instances``: keep (the default) or stop. Raises ValueError naming the variable,
    the value and the accepted ones."""
    value = variables.get(CORDONED_INSTANCES)
    if value is None:
        return CORDONED_INSTANCES_CHOICES[0]
    if not isinstance(value, str) or value not in CORDONED_INSTANCES_CHOICES:
        raise ValueError(f"{CORDONED_INSTANCES}: {value!r} is not one of {', '.join(CORDONED_INSTANCES_CHOICES)} "
                         "(what a cordoned host does with its hand-placed instances)")
    return value


def _given(variables: Mapping, name: str, default=None):
    """The variable's value; ``default`` when it is not set or null."""
    value = variables.get(name)
    return default if value is None else value


def host_margins(variables: Mapping) -> dict:
    """What a host keeps free of its RAM and of each card, as place() and the instance step's ``placement`` option
    take them (``ram_margin_mib``, ``gpu_margin_mib``). As given, not converted: place() checks them and names a bad
    one."""
    return {"ram_margin_mib": _given(variables, RAM_MARGIN, DEFAULT_RAM_MARGIN_MIB),
            "gpu_margin_mib": _given(variables, GPU_MARGIN, DEFAULT_GPU_MARGIN_MIB)}


def host_fields(variables: Mapping) -> dict:
    """A host's own fields of place()'s host input, from its variables: its labels, margins, and port range when it
    sets one (else place()'s default)."""
    fields = {"labels": _given(variables, LABELS) or {}, **host_margins(variables)}
    port_range = _given(variables, PORT_RANGE)
    if port_range:
        fields["port_range"] = port_range
    return fields


def presets(variables: Mapping) -> dict:
    return _given(variables, PRESETS) or {}


def host_instances(variables: Mapping) -> list:
    """A host's instances: the hand-placed ones, then the replicas the deploy playbook placed there."""
    return [*(_given(variables, HAND_INSTANCES) or []), *(_given(variables, PLACED_INSTANCES) or [])]


def _present(variables: Mapping) -> Iterator[tuple[Mapping, Mapping]]:
    """A host's present instances, each with the host's presets (read once: each read of a host's variable templates
    it again)."""
    layers = None
    for instance in host_instances(variables):
        if not isinstance(instance, Mapping) or instance.get("state", "present") != "present":
            continue
        if layers is None:
            layers = presets(variables)
        yield instance, layers


def present_instances(variables: Mapping) -> list[tuple[Mapping, dict, str]]:
    """A host's present instances as (instance, layered preset without secrets, key). One that cannot be layered is
    left out: the judge refuses it already, so it has no row."""
    found = []
    for instance, layers in _present(variables):
        try:
            preset, key = preset_and_key(instance, layers)
        except PresetLayerError:
            continue
        found.append((instance, preset, key))
    return found


def instance_keys(variables: Mapping) -> dict[str, str]:
    """Each present instance's key by name, as present_instances has it (the same left out), without reading the
    rest of its preset: the gateway reads every key of the fleet, and nothing else of the presets."""
    found = {}
    for instance, layers in _present(variables):
        try:
            found[str(instance.get("name"))] = instance_key(instance, layers)
        except PresetLayerError:
            continue
    return found


def fleet_host(hostvars: Mapping, name: str, variables: Mapping | None = None) -> dict:
    """A fleet host as the gateway and the scrape targets read it: its ``name``, ``address`` (``ansible_host``) and
    ``report`` (its rows of this run's judge or rollout; None when it has none). ``variables``: the host's variables
    when the caller has them already (``hostvars[name]``, which costs a lookup of every variable of the host)."""
    variables = hostvars[name] if variables is None else variables
    report = variables.get(REPORT)
    return {"name": name, "address": variables.get("ansible_host") or name,
            "report": list(report) if report is not None else None}
