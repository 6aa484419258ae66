#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_judge
short_description: Judge one host against its llama-server plans, changing nothing (target side of llama_server_host)
version_added: "0.3.0"
description:
  - The target half of C(llamafleet.llamacpp.llama_server_host); that action builds its options from the role's
    variables. Use the action; these options are its wire format.
  - In one run on the target, under the planning venv's interpreter, it reads what the role would change in
    the parts every instance shares - the service account and directories, the planning runtime, the engine,
    the model markers (no model is hashed), instances in state absent. Only when those are in place does it
    plan each present instance, render its unit and judge it the way C(llamafleet.llamacpp.llama_server_apply)
    does (files, the running engine's command line and environment, the unit's state), then read C(/health)
    and C(/props) of its engine; it stops at the first instance with work.
  - The host is RV(current) when none of it would change and every engine runs its plan healthy; the report
    rows then describe what runs. Otherwise RV(why) says what the role has to do.
author:
  - llamafleet maintainers (@llamafleet)
options:
  instances:
    description:
      - The present instances, their presets layered and without any key (C(name), C(preset),
        C(environment)).
    type: list
    elements: dict
    default: []
  keys:
    description: The API key of each instance that has one, by instance name.
    type: dict
    default: {}
  absent:
    description: Names of the instances in state absent.
    type: list
    elements: str
    default: []
  settings:
    description:
      - The per-instance settings (the options of the C(llamafleet.llamacpp.instance_settings) fragment but
        C(presets) and C(python)).
    type: dict
    required: true
  account:
    description: The service account as the role creates it (C(user), C(group), C(home), C(shell), C(comment)).
    type: dict
    required: true
  directories:
    description: The role's directories (C(path), C(owner), C(group), C(mode)).
    type: list
    elements: dict
    default: []
  runtime:
    description: The planning runtime's marker file (C(marker)) and the manifest it must hold (C(manifest)).
    type: dict
    required: true
  engine:
    description: C(bin), an installed engine; or C(marker) and C(checksum) of an engine installed from an archive.
    type: dict
    required: true
  models:
    description: The model files (C(path), C(checksum)).
    type: list
    elements: dict
    default: []
  models_marker_dir:
    description: Where the model markers are.
    type: str
    required: true
  unit_dir:
    description: Where the units are.
    type: str
    default: /etc/systemd/system
  lock_path:
    description: The rollout lock file, read only.
    type: str
    default: /run/llamafleet/rollout.lock
seealso:
  - module: llamafleet.llamacpp.llama_server_host
  - module: llamafleet.llamacpp.llama_server_apply
attributes:
  check_mode:
    description: Changes nothing in any mode.
    support: full
  diff_mode:
    description: Reports nothing to diff.
    support: none
  platform:
    description: Target systems it runs on.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
# Called by the llamafleet.llamacpp.llama_server_host action; see that one.
- name: Judge this host
  llamafleet.llamacpp.llama_server_host:
    instances: "{{ llama_server_instances }}"
    presets: "{{ llama_server_presets }}"
    engine_bin: /usr/local/bin/llama-server
"""

RETURN = r"""
current:
  description: Nothing would change and every present instance runs its plan, healthy.
  returned: always
  type: bool
why:
  description: What the role would do, first things first (empty when RV(current)).
  returned: always
  type: list
  elements: str
report:
  description: The instances' report rows, from what runs (only when RV(current)).
  returned: always
  type: list
  elements: dict
lock_holder:
  description: Who holds the rollout lock (empty when it is free).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import (  # noqa: E402
    early_entry,
    report_entry,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import host  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.instance import Instance  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_request import (  # noqa: E402
    plan_from_params,
    with_defaults,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import (  # noqa: E402
    apply_request,
    open_server_refusal,
    plan_request,
    service_environment,
    unit_settings,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import (  # noqa: E402
    instance_files,
    instance_paths,
    render_instance,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import (  # noqa: E402
    UnitRenderError,
    unit_name,
)


def judge_instance(instance: dict, key: str, settings: dict, run) -> tuple[dict | None, str]:
    """(its report row, "") when it runs its plan and nothing would change; (None, why) otherwise."""
    name = instance["name"]
    outcome = plan_from_params(with_defaults(plan_request(name, instance, instance["preset"], key, settings)),
                               check_mode=True)
    if outcome.failure:
        return None, f"instance {name}: its plan fails ({outcome.failure.splitlines()[0]})"
    plan = outcome.result
    unit = unit_name(name)
    if plan.get("external"):
        entry = early_entry(name, "external", unit=unit)
        entry["notes_count"] = len(plan.get("notes") or [])
        return entry, ""
    if open_server_refusal(name, plan["decisions"], key, settings["allow_open"]):
        return None, f"instance {name}: its plan is refused (open server)"
    unit_values = unit_settings(settings)
    try:
        rendered = render_instance(name, plan, unit_values, service_environment(settings, instance), bool(key))
    except UnitRenderError as err:
        return None, f"instance {name}: its unit cannot be written ({err})"
    request = apply_request(name, plan, rendered, instance_paths(name, unit_values), key=key, settings=settings)
    target = Instance(request, run)
    judged = target.judge()
    if not judged.settled:
        return None, f"instance {name}: {judged.why_not_settled()}"
    if not judged.last_good_current:
        return None, f"instance {name}: its last verified copy is not the unit that runs"
    observed, state, props = target.observe()
    if observed["health"] != 200:
        return None, f"instance {name}: /health answers {observed['health']}"
    problems = target.verify(state, props)
    if problems:
        return None, f"instance {name}: {problems[0]}"
    applied = {"state": "deployed", "changed": False, "restarted": False, "would_restart": False, "reasons": [],
               "rolled_back": False, **observed}
    return report_entry(name, plan, applied, unit), ""


def judge(params: dict, run) -> dict:
    settings = params["settings"]
    why = host.account_problems(params["account"]) + host.directory_problems(params["directories"])
    why += [problem for problem in [host.runtime_problem(params["runtime"]["marker"],
                                                         params["runtime"]["manifest"])] if problem]
    engine, problem = host.engine_binary(params["engine"]) if params["instances"] else ("", "")
    why += [problem] if problem else []
    why += host.model_problems(params["models"], params["models_marker_dir"])
    unit_values = unit_settings(settings)
    why += host.absent_problems(run, {
        name: instance_files(name, unit_values, settings["plan_cache_dir"], params["unit_dir"])
        for name in params["absent"]
    })
    report = []
    if not why:
        # The instances are judged only on a host whose shared parts are in place: their plans need them.
        for instance in params["instances"]:
            entry, problem = judge_instance(instance, str(params["keys"].get(instance["name"]) or ""),
                                            {**settings, "engine": engine}, run)
            if problem:
                why.append(problem)
                break
            report.append(entry)
    return {"current": not why, "why": why, "report": report if not why else [],
            "lock_holder": host.read_lock(params["lock_path"])}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "instances": {"type": "list", "elements": "dict", "default": []},
            "keys": {"type": "dict", "default": {}, "no_log": True},
            "absent": {"type": "list", "elements": "str", "default": []},
            "settings": {"type": "dict", "required": True},
            "account": {"type": "dict", "required": True},
            "directories": {"type": "list", "elements": "dict", "default": []},
            "runtime": {"type": "dict", "required": True},
            "engine": {"type": "dict", "required": True},
            "models": {"type": "list", "elements": "dict", "default": []},
            "models_marker_dir": {"type": "str", "required": True},
            "unit_dir": {"type": "str", "default": "/etc/systemd/system"},
            "lock_path": {"type": "str", "default": "/run/llamafleet/rollout.lock"},
        },
        supports_check_mode=True,
    )
    for key in module.params["keys"].values():
        if key:
            module.no_log_values.add(str(key))
    try:
        result = judge(module.params, lambda argv: module.run_command(list(argv)))
    except (OSError, KeyError, ValueError, TypeError) as err:
        # A judge that cannot read the host leaves it to the role's steps, which say what is wrong.
        result = {"current": False, "why": [f"the host could not be judged: {err}"], "report": [],
                  "lock_holder": {}}
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
