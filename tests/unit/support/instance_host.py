"""A stand-in host for the instance step's tests: the real planner on fixture facts, one systemd unit and its engine.

The real systemd, journal and engine are exercised by the molecule scenarios (default, interrupted, rollback,
start-limit, props, secrets) and the compose runtime by molecule compose on a real Docker engine; here the unit's
"running" argv is the ExecStart= of the unit file at its last restart, so every branch of the step can be driven
and its effects on disk checked.
"""

from __future__ import annotations

import dataclasses
import grp
import json
import os
import pwd
import shlex
from pathlib import Path

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import step as step_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import systemd as systemd_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.planning import PlanOutcome
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import ProbeOptions
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import UnitState
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_quoting import exec_start

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name
ENGINE = "/opt/e/llama-server"
MODEL = "/m/a.gguf"


HELP = (Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "llama-server-11434.0.0-cpu.help.txt").read_text()
# What the probes would have seen (the module's facts): the model file, its size, the free RAM, no GPU.
PROBED = {"model": MODEL, "model_bytes": 1000, "ram_avail_mib": 100, "gpus": []}


def fixture_plan(options: ProbeOptions) -> PlanOutcome:
    """The real planner on fixture facts (the captured --help of llama-server b11434, CPU build; a model file at
    MODEL; 100 MiB free): what the planning request returns, without probing a host."""
    facts = HostFacts(help=HELP, bin=options.bin, model=MODEL, api_key_file=options.api_key_file,
                      user_env=dict(options.environment), ram_avail_mib=PROBED["ram_avail_mib"])
    plan = planner.plan(options.preset, facts)
    planned = Planned(plan, facts=dict(PROBED), exec_start=exec_start(plan.argv) if plan.argv else "")
    return PlanOutcome(planned.result(), planned=planned)


def preset(ctx: str = "4096", **more) -> dict:
    """A preset of the stand-in host's model that listens on the loopback, as the tests deploy it."""
    return {"MODEL": "a.gguf", "CTX": ctx, "HOST": "127.0.0.1", "PORT": "8080", **more}


def settings_for(tmp_path, **change) -> dict:
    return {**defaults(), "home": str(tmp_path / "home"), "config_dir": str(tmp_path / "etc"),
            "credentials_dir": str(tmp_path / "etc" / "cred"), "plan_cache_dir": str(tmp_path / "cache"),
            "models_dir": str(tmp_path / "models"), "compose_dir": str(tmp_path / "compose"), "user": ME,
            "group": MY_GROUP, **change}


class Systemd:
    """One unit: what is on disk at each restart becomes what runs. ``calls`` records every command."""

    def __init__(self, tmp_path, monkeypatch, planned=fixture_plan, name="main"):
        self.tmp = tmp_path
        self.name = name
        self.state = UnitState(load_state="not-found", active_state="inactive", sub_state="dead")
        self.calls: list[list[str]] = []
        self.crash_when = lambda argv: False
        self.ctx_override = None
        self.plans = 0
        self.next_pid = 100

        def plan(options, **_kwargs):
            self.plans += 1
            return planned(options)

        monkeypatch.setattr(step_module, "plan_launch", plan)
        monkeypatch.setattr(systemd_module, "unit_path", lambda name, unit_dir: str(tmp_path / f"{name}.service"))
        monkeypatch.setattr(systemd_module, "read_unit_state", lambda run, unit: self.state)
        monkeypatch.setattr(systemd_module, "journal_tail", lambda run, unit, lines, since="": ["error: bad", "exit 1"])
        monkeypatch.setattr(step_module, "http_get",
                            lambda url, sock, timeout: (200 if self.state.running else -1, b""))
        monkeypatch.setattr(step_module, "read_props", lambda url, sock, headers=None: self.props())
        monkeypatch.setattr(step_module, "wait_healthy", self.wait)

    @property
    def unit_file(self):
        return self.tmp / f"{self.name}.service"

    def run_engine(self, argv):
        self.state = UnitState(load_state="loaded", active_state="active", sub_state="running",
                               main_pid=self.next_pid, unit_file_state="enabled", cmdline=tuple(argv),
                               environ={"XDG_CONFIG_HOME": "/tmp/llamafleet-no-config"})
        self.next_pid += 1

    def props(self):
        if not self.state.running:
            return None
        words = list(self.state.cmdline)
        ctx = self.ctx_override or int(words[words.index("-c") + 1])
        return {"default_generation_settings": {"n_ctx": ctx}, "total_slots": 1, "model_path": words[2],
                "build_info": "b1-test"}

    def wait(self, url, sock, **_kw):
        return (200, "") if self.state.running else (-1, "the engine exited while starting")

    def run(self, argv, *_args, **_kwargs):
        self.calls.append(list(argv))
        if argv[:2] == ["systemctl", "restart"]:
            line = next(x for x in self.unit_file.read_text().splitlines() if x.startswith("ExecStart="))
            argv_now = shlex.split(line[len("ExecStart="):])
            if self.crash_when(argv_now):
                self.state = UnitState(load_state="loaded", active_state="failed", sub_state="failed",
                                       result="exit-code", unit_file_state="enabled")
            else:
                self.run_engine(argv_now)
        elif argv[:3] == ["systemctl", "disable", "--now"]:
            self.state = dataclasses.replace(self.state, active_state="inactive", sub_state="dead", main_pid=0,
                                             unit_file_state="disabled")
        elif argv[:2] == ["systemctl", "daemon-reload"] and not self.unit_file.exists():
            self.state = UnitState(load_state="not-found", active_state="inactive", sub_state="dead")
        return 0, "", ""

    def verbs(self) -> list[str]:
        return [call[1] for call in self.calls if call[0] == "systemctl"]


class Docker:
    """A docker CLI with one image and the containers ``compose up`` made from the project's files (read with
    PyYAML, as compose would: ``$$`` is a dollar); ``calls`` records every command."""

    IMAGE = "llama:cpu"
    IMAGE_ENV = ("PATH=/usr/bin", "LLAMA_ARG_HOST=0.0.0.0")
    CONFIG_HASH = "com.docker.compose.config-hash"

    def __init__(self, tmp_path, monkeypatch, planned=fixture_plan):
        self.tmp = tmp_path
        self.image_id = "sha256:1111"
        self.containers: dict[str, dict] = {}
        self.calls: list[list[str]] = []
        self.crash_when = lambda command: False
        self.config_refuses = ""
        self.next_id = 1

        monkeypatch.setattr(step_module, "plan_launch", lambda options, **_kwargs: planned(options))
        monkeypatch.setattr(step_module, "http_get", lambda url, sock, timeout: (200 if self.running() else -1, b""))
        monkeypatch.setattr(step_module, "read_props", lambda url, sock, headers=None: self.props())
        monkeypatch.setattr(step_module, "wait_healthy", lambda url, sock, **_kw: (200, "") if self.running()
                            else (-1, "the engine exited while starting"))

    def container(self):
        return self.containers.get("llama-server-main")

    def running(self) -> bool:
        found = self.container()
        return bool(found and found["State"]["Running"])

    def props(self):
        if not self.running():
            return None
        command = self.container()["Config"]["Cmd"]
        return {"default_generation_settings": {"n_ctx": int(command[command.index("-c") + 1])}, "total_slots": 1,
                "model_path": command[1], "build_info": "b1-test"}

    def _up(self, argv):
        import yaml  # noqa: PLC0415 - the test's own reader of the file

        files = [argv[i + 1] for i, word in enumerate(argv) if word == "--file"]
        service_name = argv[-1]
        for path in files:
            with open(path, encoding="utf-8") as handle:
                services = (yaml.safe_load(handle) or {}).get("services") or {}
            if service_name in services:
                service = services[service_name]
                break
        else:
            return 1, "", f"no such service: {service_name}"
        # Compose keeps a running container whose service reads the same (its config hash), whatever the file's
        # form, unless told to recreate it.
        config_hash = json.dumps(service, sort_keys=True)
        existing = self.containers.get(service["container_name"])
        if ("--force-recreate" not in argv and existing and existing["State"]["Running"]
                and existing["Config"]["Labels"].get(self.CONFIG_HASH) == config_hash):
            return 0, "", ""
        command = [word.replace("$$", "$") for word in service["command"]]
        environment = [f"{k}={str(v).replace('$$', '$')}" for k, v in (service.get("environment") or {}).items()]
        crash = self.crash_when(command)
        self.containers[service["container_name"]] = {
            "Id": f"c{self.next_id}", "RestartCount": 0,
            "State": {"Status": "exited" if crash else "running", "Running": not crash, "Restarting": False,
                      "Pid": 0 if crash else 4000 + self.next_id, "ExitCode": 1 if crash else 0},
            "Config": {"Cmd": command, "Env": [*self.IMAGE_ENV, *environment],
                       "Labels": {**(service.get("labels") or {}), self.CONFIG_HASH: config_hash}},
        }
        self.next_id += 1
        return 0, "", ""

    def run(self, argv, *_args, **_kwargs):
        self.calls.append(list(argv))
        words = list(argv)
        if words[0] != "docker":
            return 0, "", ""  # the slot script
        if words[1:3] == ["image", "inspect"]:
            return (0, self.image_id + "\n", "") if words[-1] == self.IMAGE else (1, "", "No such image")
        if words[1:3] == ["container", "inspect"]:
            found = self.containers.get(words[-1])
            if found is None:
                return 1, "", f"Error: No such container: {words[-1]}"
            return 0, json.dumps([found]), ""
        if words[1] == "compose" and "config" in words:
            return (1, "", self.config_refuses) if self.config_refuses else (0, "", "")
        if words[1] == "compose" and "up" in words:
            return self._up(words)
        if words[1] == "logs":
            return 0, "load_model: failed\nexit 1\n", ""
        if words[1] == "rm":
            self.containers.pop(words[-1], None)
        if words[1] == "stop" and words[-1] in self.containers:
            # llama-server exits 0 on SIGTERM; a container stopped by hand stays stopped (unless-stopped).
            self.containers[words[-1]]["State"].update(Status="exited", Running=False, Pid=0, ExitCode=0)
        return 0, "", ""

    def verbs(self) -> list[str]:
        return [call[1] if call[1] != "compose" else "compose " + next(w for w in call if w in ("up", "config"))
                for call in self.calls if call[0] == "docker"]
