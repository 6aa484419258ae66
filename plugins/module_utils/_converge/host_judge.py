# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host judge: does anything of the host's shared parts or of its instances need the role? Changes nothing.

The module ``llama_server_judge`` runs it under Ansible's module runtime; ``judge_entry.py`` runs the very same
function straight from the planning venv (the host action's fast path). Each instance is judged by the instance
step itself (``_converge/instance.py``), for either runtime.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import host, instance
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (
    LOCK_PATH,
    UNIT_DIR,
    model_marker_dir,
    paths_of,
    unit_path,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import settings_spec
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import Runner


def argument_spec() -> dict:
    """The judge's options (the host action's wire format), with the settings table's."""
    return {
        "instances": {"type": "list", "elements": "dict", "default": []},
        "keys": {"type": "dict", "default": {}, "no_log": True},
        "absent": {"type": "list", "elements": "str", "default": []},
        "settings": settings_spec(),
        "account": {"type": "dict", "required": True},
        "directories": {"type": "list", "elements": "dict", "default": []},
        "planning_venv": {"type": "dict", "required": True},
        "engine": {"type": "dict", "default": {}},
        "models": {"type": "list", "elements": "dict", "default": []},
        "unit_dir": {"type": "str", "default": UNIT_DIR},
        "lock_path": {"type": "str", "default": LOCK_PATH},
    }


def shared_problems(params: Mapping, run: Runner, docker_run: Runner) -> tuple[str, list[str], list[str]]:
    """(the engine, what the role would change in the parts every instance shares, the absent instances that are
    still there)."""
    settings = params["settings"]
    compose = settings["runtime"] == "compose"
    why = host.account_problems(params["account"]) + host.directory_problems(params["directories"])
    venv = params["planning_venv"]
    why += [problem for problem in [host.runtime_problem(venv["marker"], venv["manifest"])] if problem]
    engine, problem = "", ""
    if compose:
        engine = settings["image_binary"]
        problem = host.image_problem(docker_run, settings) if params["instances"] else ""
    elif params["instances"]:
        engine, problem = host.engine_binary(params["engine"])
    why += [problem] if problem else []
    why += host.model_problems(params["models"], model_marker_dir(settings["models_dir"]))
    leaving = []
    for name in params["absent"]:
        paths = paths_of(name, settings, settings["compose_dir"] if compose else "")
        left = host.absent_problem(name, paths, "" if compose else unit_path(name, params["unit_dir"]),
                                   (lambda n: host.container_known(docker_run, settings, n)) if compose
                                   else (lambda n: host.unit_known(run, n)))
        if left:
            leaving.append(name)
        why += [left] if left else []
    return engine, why, leaving


def judge(params: Mapping, run: Runner, docker_run: Runner) -> dict:
    """Whether the host runs its plans. ``work`` says which instances the rollout will touch: ``instances`` (by
    name: a present one that will restart or be written, an absent one still there), or ``all`` when a part they
    share (account, runtime, engine, model) is not in place, so that every instance's plan may change."""
    engine, why, leaving = shared_problems(params, run, docker_run)
    shared = len(why) > len(leaving)
    report, work = [], list(leaving)
    image_ids: dict = {}
    if not shared:
        # The instances are judged only on a host whose shared parts are in place: their plans need them. Every one
        # is judged, so that a gateway drains exactly the ones the rollout will restart.
        for item in params["instances"]:
            entry, problem = instance.judge(
                {**item, "settings": params["settings"], "engine": engine,
                 "api_key": str(params["keys"].get(item["name"]) or "")},
                run, docker_run, unit_dir=params["unit_dir"], image_ids=image_ids)
            if problem:
                why.append(problem)
                work.append(item["name"])
                continue
            report.append(entry)
    return {"current": not why, "why": why, "report": report if not why else [], "engine": engine,
            "work": {"all": shared, "instances": work}, "lock_holder": host.read_lock(params["lock_path"])}


def judge_or_why(params: Mapping, run: Runner, docker_run: Runner) -> dict:
    """judge(); a host that cannot be read is not current, and the role's steps say what is wrong."""
    try:
        return judge(params, run, docker_run)
    except (OSError, KeyError, ValueError, TypeError) as err:
        return {"current": False, "why": [f"the host could not be judged: {err}"], "report": [], "engine": "",
                "work": {"all": True, "instances": []}, "lock_holder": {}}


def process_runner(environment: Mapping[str, str] | None = None) -> Runner:
    """Commands run as AnsibleModule.run_command would run them, where there is no AnsibleModule: (rc, out, err)."""
    env = {**os.environ, **(environment or {})}

    def run(argv) -> tuple[int, str, str]:
        try:
            # Not AnsibleModule.run_command: the judge's fast path runs as a plain script from the planning venv,
            # where there is no module (the module llama_server_judge hands its own run_command instead).
            done = subprocess.run(  # pylint: disable=ansible-bad-function
                list(argv), capture_output=True, text=True, errors="surrogateescape", env=env, check=False)
        except OSError as err:
            return 127, "", str(err)
        return done.returncode, done.stdout, done.stderr

    return run
