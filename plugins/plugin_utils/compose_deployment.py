# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One instance as a compose service, driven from the instance action (controller side).

Plan on the target (the engine's help read from the image), render the compose file here, write it with
``llama_server_compose`` (checked by ``docker compose config`` first), bring the service up with
``community.docker.docker_compose_v2`` (its wait is the health wait: the service's health check), then read what
runs (``/props``, the container's command). A failure puts the last verified files back and recreates that
container, or removes a new instance, and quotes the container's log.
"""

from __future__ import annotations

import contextlib

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import early_entry, report_entry
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    ComposeError,
    ServiceSpec,
    container_name,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import (
    compose_plan_request,
    service_environment,
    state_content,
    unit_settings,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import (
    health_timeout_s,
    instance_paths,
    uses_nvidia,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.compose_file import compose_file_text

PLAN_MODULE = "llamafleet.llamacpp.llama_server_plan"
COMPOSE_MODULE = "llamafleet.llamacpp.llama_server_compose"
COMPOSE_V2 = "community.docker.docker_compose_v2"
NO_COMMUNITY_DOCKER = (
    "the compose runtime applies its project with community.docker.docker_compose_v2, and the collection "
    "community.docker is not installed on this controller: ansible-galaxy collection install community.docker"
)


def compose_failure(result: dict) -> str:
    """docker_compose_v2's reason, with compose's own last words when the module only saw a return code."""
    msg = str(result.get("msg") or "failed")
    said = [line.strip() for line in str(result.get("stderr") or "").splitlines() if line.strip()]
    if msg.startswith("Return code") and said:
        return f"{said[-1]} ({msg})"
    return msg


class ComposeDeployment:
    def __init__(self, action, name, instance, preset, *, key, args, task_vars):
        self.action = action
        self.name, self.instance, self.preset, self.key = name, instance, preset, key
        self.args, self.task_vars = args, task_vars
        self.compose = args["compose"]
        self.container = container_name(name)
        self.check_mode = bool(action._task.check_mode)

    # ------------------------------------------------------------------------------------------------
    def _target(self, module: str, module_args: dict, python: str = "") -> dict:
        return self.action._module(module, module_args, self.task_vars, python)

    def _compose_v2(self, **module_args) -> dict:
        """docker_compose_v2 on the target, with the docker CLI's environment (DOCKER_CONFIG for its plugins)."""
        base = {"project_src": self.compose["dir"], "project_name": self.compose["project"],
                "docker_cli": self.compose["docker_cli"]}
        if self.compose["docker_host"]:
            base["docker_host"] = self.compose["docker_host"]
        task = self.action._task
        saved = task.environment
        if self.compose["docker_env"]:
            given = saved if isinstance(saved, list) else ([saved] if saved else [])
            with contextlib.suppress(AttributeError):
                task.environment = [*given, dict(self.compose["docker_env"])]
        try:
            return self._target(COMPOSE_V2, {**base, **module_args})
        finally:
            task.environment = saved

    def _have_compose_v2(self) -> bool:
        loader = getattr(self.action._shared_loader_obj, "module_loader", None)
        if loader is None:
            return True  # cannot tell: the module's own error will say
        return bool(loader.find_plugin_with_context(COMPOSE_V2, collection_list=[]).resolved)

    # ------------------------------------------------------------------------------------------------
    def run(self) -> dict:
        if not self._have_compose_v2():
            return {"failed": True, "msg": NO_COMMUNITY_DOCKER,
                    "report": early_entry(self.name, "failed", NO_COMMUNITY_DOCKER, self.container)}
        args = self.args
        request = compose_plan_request(self.name, self.instance, self.preset, self.key, args, compose=self.compose)
        plan = self._target(PLAN_MODULE, request, args["python"])
        stop = self.action._not_deployable(self.name, plan, self.key, args, self.container)
        if stop is not None:
            return stop
        decisions = plan["decisions"]
        paths = instance_paths(self.name, unit_settings(args))
        environment = service_environment(args, self.instance)
        facts = plan.get("facts") or {}
        timeout = health_timeout_s(int(facts.get("model_bytes") or 0), args["health_timeout_base_s"],
                                   args["health_timeout_per_gib_s"])
        spec = ServiceSpec(
            name=self.name, image=self.compose["image"], user=f"{self.compose['uid']}:{self.compose['gid']}",
            model_dirs=(args["models_dir"], *args["model_dirs"]), slot_dir=str(decisions.get("slot_dir") or ""),
            key_file=paths.key_file if self.key else "", gpus=uses_nvidia(plan, args["nvidia"]),
            gpu_selection=str({**environment, **(plan.get("env") or {})}.get("CUDA_VISIBLE_DEVICES") or ""),
            environment={str(k): "" if v is None else str(v) for k, v in environment.items()},
            start_period_s=timeout, stop_grace_s=args["stop_timeout_s"], nofile=self.compose["nofile"],
            health_command=tuple(self.compose["health_command"]),
            labels={"io.llamafleet.image-id": self.compose["image_id"]},
        )
        try:
            text = compose_file_text(self.name, plan, spec, self.compose["project"])
        except ComposeError as err:
            message = f"instance {self.name}: {err}"
            return {"failed": True, "msg": message, "plan": plan,
                    "report": early_entry(self.name, "failed", message + " (nothing was changed)", self.container)}
        files = {
            "instance": self.name, "compose_content": text, "compose_dir": self.compose["dir"],
            "project": self.compose["project"], "container": self.container, "command": list(plan["argv"][1:]),
            "key_file": paths.key_file if self.key else "", "key_content": f"{self.key}\n" if self.key else "",
            "stale_key_file": "" if self.key else paths.key_file, "api_key": self.key,
            "home_dir": paths.home_dir, "slot_dir": str(decisions.get("slot_dir") or ""),
            "slot_persist": bool(decisions.get("slot_persist")), "user": args["user"], "group": args["group"],
            "health_url": decisions["health_url"], "expect": dict(decisions.get("expect") or {}),
            "docker_cli": self.compose["docker_cli"], "last_good_dir": f"{args['config_dir']}/last-good",
            "docker_env": {**self.compose["docker_env"],
                           **({"DOCKER_HOST": self.compose["docker_host"]} if self.compose["docker_host"] else {})},
            "state_file": paths.state_file,
            "state_content": state_content(facts),
            "log_lines": self.compose["log_lines"],
        }
        return self._deploy(plan, files, timeout)

    def _deploy(self, plan: dict, files: dict, timeout: int) -> dict:
        written = self._target(COMPOSE_MODULE, {**files, "state": "written"})
        if written.get("failed"):
            message = f"{written.get('msg')} (nothing was changed)"
            return self._outcome(plan, {"state": "failed", "error": message}, message)
        reasons = list(written.get("changed_files") or [])
        applied = {"changed": bool(reasons), "reasons": reasons, "would_restart": bool(reasons),
                   "restarted": False, "rolled_back": False}
        if self.check_mode and reasons:
            return self._outcome(plan, {**applied, "state": "previewed"}, diff=written.get("diff"))
        up = self._compose_v2(files=written["project_files"], services=[self.name], state="present", pull="never",
                              recreate="always" if written.get("key_changed") else "auto", remove_orphans=False,
                              wait=True, wait_timeout=timeout)
        applied["restarted"] = bool(up.get("changed"))
        applied["changed"] = applied["changed"] or applied["restarted"]
        why = "" if not up.get("failed") else f"docker compose up: {compose_failure(up)}"
        if not why:
            verified = self._target(COMPOSE_MODULE, {**files, "state": "verified"})
            applied.update({k: verified.get(k) for k in ("health", "props", "runs_plan") if k in verified})
            if not verified.get("failed"):
                return self._outcome(plan, {**applied, "state": "previewed" if self.check_mode else "deployed"},
                                     diff=written.get("diff"))
            why = str(verified.get("msg") or "the container does not run the plan")
        return self._roll_back(plan, files, written, applied, why=why, timeout=timeout)

    def _roll_back(self, plan, files, written, applied, *, why, timeout) -> dict:
        engine_says = list(self._target(COMPOSE_MODULE, {**files, "state": "failed"}).get("engine_says") or [])
        if written.get("new"):
            self._compose_v2(files=[f"{self.name}.yaml"], services=[self.name], state="absent", remove_orphans=False)
        restored = self._target(COMPOSE_MODULE, {**files, "state": "restored"})
        outcome = restored.get("outcome")
        if outcome == "restored":
            back = self._compose_v2(files=restored["project_files"], services=[self.name], state="present",
                                    pull="never", recreate="always", remove_orphans=False, wait=True,
                                    wait_timeout=timeout)
            if back.get("failed"):
                tail = f" — the rollback did not complete: {back.get('msg')}"
            else:
                applied["rolled_back"] = True
                tail = " — rolled back to the previous compose file, whose container is healthy again"
        elif outcome == "removed":
            tail = " — the new instance was removed"
        else:
            tail = f" — the rollback did not complete: {restored.get('msg')}"
        lines = [f"instance {self.name}: {why}{tail}"]
        if engine_says:
            lines.append(f"docker logs {self.container} (last {len(engine_says)} lines):")
            lines += engine_says
        message = "\n".join(lines)
        return self._outcome(plan, {**applied, "changed": True, "state": "failed", "error": why + tail,
                                    "engine_says": engine_says}, message)

    def _outcome(self, plan: dict, applied: dict, failure: str = "", diff: dict | None = None) -> dict:
        entry = report_entry(self.name, plan, applied, self.container)
        outcome = {"changed": bool(applied.get("changed")), "applied": applied, "report": entry,
                   "plan": {k: plan.get(k) for k in ("argv", "env", "notes", "plan_warnings", "decisions", "facts")}}
        if diff:
            outcome["diff"] = diff
        if failure:
            outcome.update(failed=True, msg=failure)
        return outcome
