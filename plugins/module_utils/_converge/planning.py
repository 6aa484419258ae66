# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One planning request: ``llama_server_plan``'s options in, its result (or why not) out; and ``plan_launch``,
which probes and plans one launch from typed options for the module and for the instance step alike."""

from __future__ import annotations

import dataclasses
import json
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.instance import plan_option_errors
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import unit_name
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import BY_NAME
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import (
    CpuBudget,
    GGUFInfo,
    HostFacts,
    SplitDev,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import plan_options
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.docker import DockerAccess
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import (
    ProbeError,
    ProbeOptions,
    probe_and_plan,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import (
    check_port as check_port_owner,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_quoting import (
    UnitValueError,
    exec_start,
)

# Where ggml-org's server images put the engine (their entrypoint): the image_binary setting's default.
IMAGE_DEFAULT_BIN = BY_NAME["image_binary"].default


@dataclass
class PlanOutcome:
    """The plan module's result fields, and why it failed ("" when it planned)."""

    result: dict
    failure: str = ""
    warnings: list[str] = field(default_factory=list)
    # Values to mask wherever they would be printed (a key found in the preset).
    secrets: list[str] = field(default_factory=list)
    exception: str = ""
    planned: Planned | None = None  # the typed plan, when planning got that far


class _Refused(Exception):
    pass


def facts_from_dict(data: dict) -> HostFacts:
    """host_facts option -> HostFacts (unknown keys rejected with their names)."""
    fields = {f.name for f in dataclasses.fields(HostFacts)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ValueError(f"host_facts: unknown field(s) {', '.join(unknown)}")
    values = dict(data)
    for key in ("gguf", "draft_gguf"):
        if isinstance(values.get(key), dict):
            info = dict(values[key])
            if "head_count_kv_layers" in info:
                info["head_count_kv_layers"] = tuple(info["head_count_kv_layers"])
            values[key] = GGUFInfo(**info)
    if isinstance(values.get("cpu"), dict):
        values["cpu"] = CpuBudget(**values["cpu"])
    if "split_devs" in values:
        values["split_devs"] = tuple(SplitDev(**d) for d in values["split_devs"] or ())
    for key in ("arg_env", "user_env"):
        if key in values:
            values[key] = {str(k): str(v) for k, v in (values[key] or {}).items()}
    return HostFacts(**values)


def read_preset(params: Mapping) -> dict[str, str]:
    """The preset file, then the preset option over it, normalised (PresetError / _Refused on bad input)."""
    preset: dict[str, str] = {}
    if params.get("preset_file"):
        try:
            with open(params["preset_file"], encoding="utf-8") as handle:
                preset.update(planner.parse_env(handle.read()))
        except (OSError, UnicodeDecodeError) as err:
            raise _Refused(f"cannot read preset_file {params['preset_file']}: {err}") from err
    preset.update(planner.normalize_preset(params.get("preset") or {}))
    if params.get("api_key"):
        preset["API_KEY"] = str(params["api_key"])
    return preset


def previous_ram_avail(path: str | None) -> int:
    """The free RAM the last verified plan used, from its state file; 0 = none (a first deployment)."""
    if not path:
        return 0
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle).get("ram_avail_mib", 0)
    except (OSError, ValueError, AttributeError):
        return 0
    return value if isinstance(value, int) and value > 0 else 0


def with_defaults(request: Mapping) -> dict:
    """Options given as a plain dict (a test's, the GPU check's), completed with the plan module's defaults."""
    spec = plan_options.argument_spec()
    unknown = sorted(set(request) - set(spec))
    if unknown:
        raise ValueError(f"unknown planning option(s): {', '.join(unknown)}")
    return {name: request.get(name, option.get("default")) for name, option in spec.items()}


def plan_from_params(params: Mapping, check_mode: bool, warn: Callable[[str], None] | None = None) -> PlanOutcome:
    """llama_server_plan: read and check its options, then probe and plan; never raises for bad input. ``warn``
    (the module's) is given each of the outcome's warnings once the plan is made; they stay in the outcome."""
    secrets: list[str] = []
    try:
        preset = read_preset(params)
    except (planner.PresetError, _Refused) as err:
        return PlanOutcome({"changed": False}, failure=str(err))
    # A key in a preset is masked wherever Ansible would print it, and never returned.
    key = preset.get("API_KEY", "").strip()
    if key:
        secrets += [key, preset["API_KEY"]]
    errors = plan_option_errors(params, preset)
    if errors:
        return PlanOutcome({"changed": False}, failure="; ".join(errors), secrets=secrets)
    outcome = plan_launch(options_from_params(params, preset, check_mode), check_port=params["check_port"],
                          fail_on_refusal=params["fail_on_refusal"], host_facts=params["host_facts"])
    outcome.secrets = secrets
    if warn is not None:
        for text in outcome.warnings:
            warn(text)
    return outcome


def options_from_params(params: Mapping, preset: dict, check_mode: bool) -> ProbeOptions:
    """What the probes take, from the module's options."""
    in_image = bool(params["engine_image"])
    unit = params["unit"] or (unit_name(params["instance"]) if params["instance"] and not in_image else "")
    return ProbeOptions(
        **plan_options.copied_fields(params),
        preset=preset,
        bin=params["bin"] or (IMAGE_DEFAULT_BIN if in_image else ""),
        environment={str(k): "" if v is None else str(v) for k, v in (params["environment"] or {}).items()},
        unit=unit,
        slot_dir=params["slot_dir"] or "",
        cache_dir=params["cache_dir"] or "",
        write_cache=not check_mode,
        stable_ram_avail_mib=params["stable_ram_avail_mib"] or previous_ram_avail(params["state_file"]),
        docker=DockerAccess(cli=params["docker_cli"], host=params["docker_host"]),
    )


def plan_launch(options: ProbeOptions, *, check_port: bool = True, fail_on_refusal: bool = True,
                host_facts: Mapping | None = None) -> PlanOutcome:
    """Probe the host and plan one launch (with ``host_facts``, plan from them instead): the typed ``Planned``
    and the module's result fields, or why not. Never raises for bad input. The plan module and the instance step
    both plan through here, so a launch is planned one way only."""
    result = {"changed": False, "port_conflict": "", "engine_runs": 0, "unset_environment": []}
    try:
        planned, preflight, warnings = _probe(options, check_port, host_facts)
    except (ProbeError, planner.PlanError, planner.PresetError, ValueError, TypeError) as err:
        return PlanOutcome(result, failure=str(err))
    except Exception as err:  # report probe bugs as a failed task with the traceback attached
        return PlanOutcome({}, failure=f"llama_server_plan: unexpected error: {err}",
                           exception=traceback.format_exc())
    try:
        planned = dataclasses.replace(planned, exec_start=exec_start(planned.plan.argv) if planned.plan.argv else "")
    except UnitValueError as err:
        return PlanOutcome({}, failure=f"the planned command line cannot be written into a unit: {err}")
    warnings += [f"[{note.id}] {note.text}" for note in planned.plan.warnings]
    return PlanOutcome(planned.result(), failure=_failure(planned, preflight, fail_on_refusal), warnings=warnings,
                       planned=planned)


def _probe(options: ProbeOptions, check_port: bool, host_facts: Mapping | None):
    """(the plan with what the probes saw, the engine's parser's answer, warnings), from the given facts or from
    the host's probes."""
    if host_facts is not None:
        facts = facts_from_dict(dict(host_facts))
        plan = planner.plan(options.preset, facts)
        return Planned(plan, facts={"source": "host_facts"}, help_text=facts.help), None, []
    probe = probe_and_plan(options)
    conflict = ""
    if check_port and not probe.plan.external:
        conflict = check_port_owner(probe.plan, options.unit, own_container=probe.container.id)
    planned = Planned(probe.plan, facts=probe.probed, unset_environment=tuple(probe.unset_environment),
                      preflight=probe.preflight.as_dict() if probe.preflight else None, port_conflict=conflict,
                      engine_runs=probe.engine_runs, help_text=probe.facts.help)
    return planned, probe.preflight, list(probe.warnings)


def _failure(planned: Planned, preflight, fail_on_refusal: bool) -> str:
    """Why the plan may not go on: the engine's parser refused it, a foreign listener, the load guard."""
    if preflight is not None and not preflight.passed:
        return ("the engine refused the planned command line (its own parser, before anything on the host "
                f"changed): {preflight.engine_says}")
    if planned.port_conflict:
        return planned.port_conflict
    refusal = planned.plan.refusal
    if refusal and fail_on_refusal:
        return f"[{refusal.id}] {refusal.text}"
    return ""
