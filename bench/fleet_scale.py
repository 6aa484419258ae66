"""The deploy playbook's controller-side work for one run, at fleet scale: which steps grow faster than the fleet.

Usage: .venv/bin/python bench/fleet_scale.py [--sizes 100,300,1000] [--instances 8] [--runs 3]

For each size N this builds a real Ansible inventory in a temporary directory (an INI file of N fleet hosts and two
gateways, with group_vars as a real fleet keeps them: llama_server_presets, llama_server_instances (one hand-placed
``main``, as playbooks/vars/local-fleet.yml has it), llama_fleet_deployments (50 deployments, their replicas scaled so
that each host runs --instances of them), the gateway's settings and keys, with Jinja where the local fleet has it),
loads playbooks/deploy_llm.yml itself (InventoryManager, VariableManager, HostVars, Playbook.load), and runs the
controller's side of one deploy run in-process, in the playbook's order, with each task's variables from
VariableManager.get_vars and its arguments templated from the playbook's own text (so Ansible's lazy templating of
``hostvars`` and of the group_vars is counted as in a real run):

  fleet_run        the action fleet_run (which also checks the scrape targets file)
  judge_args       per host: the arguments of the role's judge task (llama_server_host) templated, and the options
                   its action reads from the role's variables (role_variables: role_vars.judge_options; the
                   instances are _llama_server_all_instances, which reads the play's llama_server_stop_instances),
                   and the host's llama_fleet_deployments templated by the action (place: each distinct string once)
  fleet_deploy     the action fleet_deployments (placement from the judges' readings, the ledger, the scope)
  host_facts       per host: the judge play's set_fact of its share (placed_instances, the lookup) and its status
  gw_judge         the gateways the first gateway play configures (gateways_to_configure over hostvars: the judge
                   play judges a gateway that is also a fleet host with llama_gateway_judge; these gateways are not
                   fleet hosts, so the role runs on them)
  gw_servers       for each of the three gateway plays: the set_fact of gateway_servers over hostvars (with the
                   play's llama_gateway_keep_hosts: unfinished_hosts), once for the play's gateways (run_once)
  gw_render        per gateway play: llama_gateway_config's arguments templated and JSON-encoded on the controller,
                   then the module's own function (_converge/gateway.py write_config: config_file + haproxy_config),
                   less its check; each gateway renders the same file on its own host, so it runs once per play
  haproxy_check    per gateway play: `haproxy -c -f FILE` on the rendered file (HAProxy 2.6 here, /usr/sbin/haproxy)
  fleet_rollout    the hosts with work (hosts_with_work over hostvars: the rollout play's hosts), then the action
                   fleet_rollout (order and batches from the gateway's models and the judgements)
  removal_hosts    the hosts of the plays after the rollout whose hosts are filters over hostvars
                   (gateways_before_removals, removal_hosts, gateways_after_rollout)
  removals         per host of the removals play: its when, and the set_fact of replicas_to_remove over hostvars
  fleet_report     the action fleet_report: the Markdown summary written to a file, the placement ledger read,
                   merged and written, and the scrape targets written

The hosts' side is recorded, never run: each host's judgement (``_llama_server_judgement`` with its ``placement``
HostReading, ``llama_server_report`` rows in report_entry's shape), then what the rollout and the removals leave
(report rows deployed or absent, ``llama_fleet_status``), all built here. The run is a fleet-wide preset change: the
replicas of one deployment in ten restart (most hosts roll out), one host in fifty is cordoned (its replicas move,
then are removed), one in a hundred is unreachable (its replicas are placed again); the ledger and the scrape targets
file are those of the previous run. Not counted: the per-host tasks of the rollout play itself (the llama_server
role) and the judge action's own input checks. The action plugins run in-process (their _execute_module is never
called: they send nothing to a host).

Each size runs in a child process (its peak RSS is that size's alone), --runs times; the table gives the median of
each step, the total, the time per host and the peak memory, then how the time per host grows from the smallest size
to the largest (x1.0 is linear; the target: at most x1.5 from 100 to 1000 hosts, and at 1000 hosts a total within
60 s and 1 GiB).
"""

from __future__ import annotations

import argparse
import copy
import functools
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from ansible.plugins.loader import init_plugin_loader  # noqa: E402

import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

# Ansible's own collection loader must own ansible_collections before any of the collection's modules is imported:
# the playbook's FQCN filters and actions then resolve to the same modules this file imports.
init_plugin_loader([conftest.collection_path()])
from ansible.inventory.manager import InventoryManager  # noqa: E402
from ansible.parsing.dataloader import DataLoader  # noqa: E402
from ansible.playbook import Playbook  # noqa: E402
from ansible.playbook.block import Block  # noqa: E402
from ansible.playbook.play import Play  # noqa: E402
from ansible.template import Templar  # noqa: E402
from ansible.vars.clean import module_response_deepcopy, strip_internal_keys  # noqa: E402
from ansible.vars.hostvars import HostVars  # noqa: E402
from ansible.vars.manager import VariableManager  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.action import (  # noqa: E402
    fleet_deployments,
    fleet_report,
    fleet_rollout,
    fleet_run,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import gateway  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import (  # noqa: E402
    config_file,
    fleet_routes,
    runtime_api,
    scrape_targets,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import (  # noqa: E402
    deployment_versions,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Card  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import (  # noqa: E402
    Ledger,
    LedgerHost,
    ledger_text,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (  # noqa: E402
    HostCapacity,
    HostReading,
    Need,
    PlacedReplica,
)
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.templated import templated  # noqa: E402

PLAYBOOK = os.path.join(ROOT, "playbooks", "deploy_llm.yml")
LUA = os.path.join(ROOT, "roles", "llama_gateway", "files", "llamafleet.lua")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
STEPS = ("fleet_run", "judge_args", "fleet_deploy", "host_facts", "gw_judge", "gw_servers", "gw_render",
         "haproxy_check", "fleet_rollout", "removal_hosts", "removals", "fleet_report")
DEPLOYMENTS = 50
GATEWAYS = ("gw1", "gw2")
CARDS = 8
CARD_MIB = 81559  # an H100's total as NVML gives it
HOST_RAM_MIB = 1024 * 1024
OLD_VERSION = "previous-preset"  # what a replica of a changed deployment still runs
ENGINE_KEY, CLIENT_KEY = "engine-key-bench-000001", "client-key-bench-000001"


def timed_run(argv: list[str], times: list[float]) -> tuple[int, str, str]:
    """Run a command as the gateway module does, adding its wall time to times."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    times.append(time.perf_counter() - start)
    return done.returncode, done.stdout, done.stderr


# ------------------------------------------------------------------ the fleet as its inventory says it
@dataclass
class Fleet:
    """The simulated fleet: its hosts and gateways, what it serves, and this run's exceptions."""

    size: int
    instances: int  # placed replicas per host
    deployments: int = DEPLOYMENTS
    replicas: int = 0  # per deployment
    hosts: list[str] = field(default_factory=list)
    cordoned: set[str] = field(default_factory=set)
    unreachable: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)  # deployments whose preset changed: their replicas restart

    @classmethod
    def of(cls, size: int, instances: int) -> Fleet:
        slots = size * instances
        # The most deployments up to 50 that share the slots evenly (50 x 160 replicas = 8 per host on 1000 hosts).
        count = max(number for number in range(1, DEPLOYMENTS + 1) if slots % number == 0)
        fleet = cls(size=size, instances=instances, deployments=count, replicas=slots // count)
        fleet.hosts = [f"host{number:04d}" for number in range(size)]
        fleet.cordoned = {name for number, name in enumerate(fleet.hosts) if number % 50 == 7}
        fleet.unreachable = {name for number, name in enumerate(fleet.hosts) if number % 100 == 3}
        fleet.changed = {model_name(number) for number in range(count) if number % 10 == 0}
        return fleet

    def address(self, host: str) -> str:
        number = int(host.removeprefix("host"))
        return f"10.{1 + number // 250}.{number % 250 + 1}.10"

    def gpus(self, deployment: int) -> int:
        return 0 if deployment % 5 == 4 else 1  # one deployment in five serves from RAM

    def placed(self) -> dict[str, list[tuple[int, int, int]]]:
        """What the previous run placed: per host, (deployment, replica, slot on the host). Slot k of the fleet
        (deployment d's replica r is k = d * replicas + r) goes to host k mod N: a deployment's replicas land on
        distinct hosts (spread), and every host gets --instances of them, slot j on card j."""
        found: dict[str, list[tuple[int, int, int]]] = {name: [] for name in self.hosts}
        for deployment in range(self.deployments):
            for replica in range(self.replicas):
                slot = deployment * self.replicas + replica
                found[self.hosts[slot % self.size]].append((deployment, replica, slot // self.size))
        return found


def model_name(deployment: int) -> str:
    return f"model{deployment:02d}"


def need_mib(fleet: Fleet, deployment: int) -> int:
    return 18000 + 100 * deployment if fleet.gpus(deployment) else 6000 + 50 * deployment


def write_inventory(fleet: Fleet, directory: str) -> str:
    """The inventory as an operator keeps it: hosts in INI, the fleet's settings in group_vars."""
    lines = ["[llama_fleet]"]
    for name in fleet.hosts:
        cordon = " llama_fleet_cordoned=true" if name in fleet.cordoned else ""
        lines.append(f"{name} ansible_host={fleet.address(name)}{cordon}")
    lines += ["", "[llama_fleet_gateway]"]
    lines += [f"{name} ansible_host=10.250.0.{number + 1}" for number, name in enumerate(GATEWAYS)]
    with open(os.path.join(directory, "hosts.ini"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    group_vars = os.path.join(directory, "group_vars")
    os.makedirs(group_vars)
    presets = {model_name(number): {"model": f"{model_name(number)}.gguf", "ctx": 8192, "parallel": 4,
                                    "extra_args": f"--alias {model_name(number)}"}
               for number in range(fleet.deployments)}
    presets["gemma"] = {"model": "gemma-3-270m.gguf", "ctx": 4096, "threads": 1, "extra_args": "--alias gemma"}
    deployments = []
    for number in range(fleet.deployments):
        item = {"name": model_name(number), "preset": model_name(number), "replicas": fleet.replicas,
                "gpus": fleet.gpus(number), "settings": {"host": "{{ ansible_host }}"},
                "api_key": "{{ vault_llama_engine_key }}"}
        if number == 1:
            item["max_unavailable"] = "50%"  # one deployment with its own rollout bound
        deployments.append(item)
    files = {
        "all.yml": {"vault_llama_engine_key": ENGINE_KEY, "vault_llama_client_key": CLIENT_KEY,
                    "llama_fleet_ledger_path": os.path.join(directory, "fleet-ledger.json"),
                    "llama_fleet_summary_path": os.path.join(directory, "fleet-summary.md"),
                    "llama_fleet_metrics_targets_path": os.path.join(directory, "fleet-targets.json")},
        "llama_fleet.yml": {"llama_server_presets": presets, "llama_server_metrics": True,
                            "llama_server_instances": [{"name": "main", "preset": "gemma",
                                                        "host": "{{ ansible_host }}", "port": 8080,
                                                        "api_key": "{{ vault_llama_engine_key }}"}],
                            "llama_fleet_deployments": deployments},
        "llama_fleet_gateway.yml": {
            "llama_gateway_install": False, "llama_gateway_metrics_port": 8405,
            "llama_gateway_api_keys": ["{{ vault_llama_client_key }}"],
            "llama_gateway_config_path": os.path.join(directory, "gateway", "haproxy.cfg"),
            "llama_gateway_lua_path": LUA, "llama_gateway_run_user": "", "llama_gateway_chroot": "",
            "llama_gateway_admin_socket": os.path.join(directory, "gateway", "admin.sock"),
            "llama_gateway_state_file": os.path.join(directory, "gateway", "server-state")},
    }
    for name, content in files.items():
        with open(os.path.join(group_vars, name), "w", encoding="utf-8") as handle:
            json.dump(content, handle, indent=1)  # JSON is YAML: group_vars read it as an operator's file
    os.makedirs(os.path.join(directory, "gateway"))
    open(os.path.join(directory, "gateway", "server-state"), "w", encoding="utf-8").close()
    return os.path.join(directory, "hosts.ini")


# ------------------------------------------------------------------ the hosts' side, recorded
def replica_record(fleet: Fleet, host: str, placed: tuple[int, int, int], *, versions: dict,
                   current: bool) -> PlacedReplica:
    """One replica the host runs, as its judge reads it (and as the ledger records it)."""
    deployment, replica, slot = placed
    name = model_name(deployment)
    cards = f"GPU-{host}-{slot}" if fleet.gpus(deployment) else "-1"
    return PlacedReplica(instance=f"{name}-{replica}", deployment=name, replica=replica, port=8081 + slot,
                         cuda_visible_devices=cards, memory_mib=need_mib(fleet, deployment),
                         version=versions[name] if current else OLD_VERSION, current=current)


def report_row(fleet: Fleet, host: str, instance: str, model: str, port: int, *, state: str, runs_plan: bool,
               restarted: bool = False, was_running: bool = True) -> dict:
    """One row of a host's report, in report.report_entry's shape."""
    return {"instance": instance, "unit": f"llama-server-{instance}.service", "model": f"{model}.gguf",
            "planned_ctx": 8192, "ngl": "auto", "cache_ram": "0", "gpus": 1, "vram_mib": CARDS * CARD_MIB,
            "ram_mib": HOST_RAM_MIB, "notes_count": 2, "metrics": True, "host": fleet.address(host),
            "port": str(port), "state": state, "ctx": "8192×4", "slots": 4, "model_name": model,
            "changed": restarted, "restarted": restarted, "would_restart": state == "previewed",
            "reasons": ["the preset changed"] if state == "previewed" or restarted else [], "pid": 4242,
            "health": 200, "runs_plan": runs_plan, "build": "b6000", "rolled_back": False, "rewritten": [],
            "was_running": was_running}


def judgement(fleet: Fleet, host: str, placed: list[tuple[int, int, int]], versions: dict) -> dict:
    """What the host's judge returned (the role registers it as _llama_server_judgement)."""
    replicas = [replica_record(fleet, host, entry, versions=versions, current=model_name(entry[0]) not in fleet.changed)
                for entry in placed]
    used = {slot: need_mib(fleet, deployment) for deployment, _replica, slot in placed if fleet.gpus(deployment)}
    cards = tuple(Card(uuid=f"GPU-{host}-{index}", index=index, total_mib=CARD_MIB,
                       free_mib=CARD_MIB - 600 - used.get(index, 0)) for index in range(CARDS))
    ram_used = 4096 + sum(need_mib(fleet, deployment) for deployment, _replica, _slot in placed
                          if not fleet.gpus(deployment))
    reading = HostReading(
        capacity=HostCapacity(ram_total_mib=HOST_RAM_MIB, ram_free_mib=HOST_RAM_MIB - ram_used, gpus=cards,
                              ports_used=(22, 8080)),
        placed=tuple(replicas),
        estimates={model_name(number): Need(memory_mib=need_mib(fleet, number), ram_mib=1024 if fleet.gpus(number)
                                            else 0) for number in range(fleet.deployments)})
    rows = [report_row(fleet, host, "main", "gemma", 8080, state="deployed", runs_plan=True)]
    rows += [report_row(fleet, host, replica.instance, replica.deployment, replica.port,
                        state="deployed" if replica.current else "previewed", runs_plan=replica.current)
             for replica in replicas]
    work = [replica.instance for replica in replicas if not replica.current]
    return {"changed": False, "current": not work, "why": ["the preset changed"] if work else [], "report": rows,
            "engine": "b6000", "work": {"all": False, "instances": work}, "placement": reading.as_dict()}


def previous_files(fleet: Fleet, placed: dict, versions: dict, directory: str) -> dict[str, str]:
    """The files the previous run left: the placement ledger, and the scrape targets (every engine's /metrics)."""
    ledger = Ledger(fleet="llama_fleet", hosts={
        host: LedgerHost(placed=tuple(replica_record(fleet, host, entry, versions=versions, current=True)
                                      for entry in sorted(placed[host])))
        for host in fleet.hosts})
    groups = []
    for host in fleet.hosts:
        for deployment, replica, slot in placed[host]:
            labels = {"llamafleet": "engine", "host": host, "instance": f"{model_name(deployment)}-{replica}",
                      "model": model_name(deployment), "preset": model_name(deployment), "preset_version": "x"}
            groups.append({"targets": [f"{fleet.address(host)}:{8081 + slot}"], "labels": labels})
    return {os.path.join(directory, "fleet-ledger.json"): ledger_text(ledger),
            os.path.join(directory, "fleet-targets.json"): scrape_targets.targets_text(groups)}


def previous_routes(fleet: Fleet, placed: dict) -> str:
    """The gateway's routes file as the previous run wrote it (what a kept host's servers are)."""
    servers = [fleet_routes.Server(host=host, instance="main", address=fleet.address(host), port=8080, slots=4,
                                   model="gemma", key=ENGINE_KEY) for host in fleet.hosts]
    servers += [fleet_routes.Server(host=host, instance=f"{model_name(deployment)}-{replica}",
                                    address=fleet.address(host), port=8081 + slot, slots=4,
                                    model=model_name(deployment), key=ENGINE_KEY)
                for host in fleet.hosts for deployment, replica, slot in placed[host]]
    return config_file.routes_text(servers)


# ------------------------------------------------------------------ Ansible's side, in-process
def tasks_of(blocks) -> Iterator:
    for block in blocks:
        for part in (block.block, block.rescue, block.always):
            for item in part:
                if isinstance(item, Block):
                    yield from tasks_of([item])
                else:
                    yield item


class PlaybookRun:
    """One deploy run's controller work over a real inventory: each task's variables from VariableManager, its
    arguments templated from the playbook, its result registered as the strategy does; the steps timed."""

    def __init__(self, fleet: Fleet, inventory_path: str, playbook: Playbook, loader: DataLoader,
                 inventory: InventoryManager):
        self.fleet = fleet
        self.loader = loader
        self.inventory = inventory
        self.variables = VariableManager(loader=loader, inventory=inventory)
        self.hostvars = HostVars(inventory=inventory, variable_manager=self.variables, loader=loader)
        self.plays = {play.get_name(): play for play in playbook.get_plays()}
        self.directory = os.path.dirname(inventory_path)
        self.times = dict.fromkeys(STEPS, 0.0)
        self.all_hosts = list(fleet.hosts)
        self.reached = [name for name in fleet.hosts if name not in fleet.unreachable]
        # The judge play loses the unreachable hosts: the strategy lists them in the play's removed hosts.
        self.plays["Judge the fleet against its plans"]._removed_hosts = sorted(fleet.unreachable)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.times[name] += time.perf_counter() - start

    def task(self, play: str, name: str):
        return next(task for task in tasks_of(self.plays[play].compile()) if task.name == name)

    def role_play(self, play: str) -> str:
        """The play's name for the gateway role it includes (include_role: loaded when it runs), as a play of the
        same variables with the role in it, so that the role's tasks and their variables are read as the strategy
        would after the include."""
        name = f"{play} (llama_gateway)"
        if name not in self.plays:
            original = self.plays[play]
            self.plays[name] = Play.load({"name": name, "hosts": original.hosts, "gather_facts": False,
                                          "vars_files": original.vars_files, "vars": original.vars,
                                          "roles": [{"role": "llamafleet.llamacpp.llama_gateway"}]},
                                         variable_manager=self.variables, loader=self.loader)
        return name

    def task_vars(self, play: str, task, host: str, play_hosts: list[str] | None = None) -> dict:
        """The task's variables on the host, as the strategy gets them (the play's hosts: the fleet, else
        ``play_hosts``; ansible_play_hosts leaves out the play's removed hosts)."""
        hosts = play_hosts or self.all_hosts
        return self.variables.get_vars(play=self.plays[play], host=self.inventory.get_host(host), task=task,
                                       _hosts=hosts, _hosts_all=hosts)

    def template(self, variables: dict, value):
        return Templar(loader=self.loader, variables=variables).template(value)

    def register(self, hosts: list[str], name: str, result: dict) -> None:
        clean = strip_internal_keys(module_response_deepcopy(result))
        for host in hosts:
            self.variables.set_nonpersistent_facts(host, {name: clean})

    def run_action(self, action_module, args: dict, task_vars: dict) -> dict:
        """An action plugin of the collection, in-process (as tests/unit/support/actions.py runs them)."""
        task = mock.MagicMock()
        task.args, task.async_val, task.check_mode, task.diff = dict(args), 0, False, False
        # The host's templar: an action with fleet_variables templates the playbook's variables itself.
        action = action_module.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=self.loader,
                                            templar=Templar(loader=self.loader, variables=task_vars),
                                            shared_loader_obj=None)
        return action.run(task_vars=task_vars)

    def action_task(self, play: str, name: str, action_module, first: str) -> tuple[dict, dict]:
        """A run_once action task: its variables on the play's first host, its arguments templated, its result."""
        task = self.task(play, name)
        variables = self.task_vars(play, task, first)
        args = self.template(variables, task.args)
        return self.run_action(action_module, args, variables), variables

    # -------------------------------------------------------------- the plays, in order
    def judge_play(self, placed: dict, versions: dict) -> None:
        play = "Judge the fleet against its plans"
        first = self.all_hosts[0]
        with self.step("fleet_run"):
            result, _variables = self.action_task(play, "Say which hosts this run holds", fleet_run, first)
            self.variables.set_host_facts("localhost", result["ansible_facts"])
            # run_once: the strategy registers the result for every host of the play (the unreachable ones too).
            self.register(self.all_hosts, "_llama_fleet_read", result)
        assert not result.get("failed"), result
        # The judge's arguments, templated per host on the controller before its module runs there (the action's
        # own input checks are not counted; what the judge returns is recorded below).
        judges = self.task(play, "Judge this host against its plans (changes nothing)")
        with self.step("judge_args"):
            for host in self.all_hosts:
                variables = self.task_vars(play, judges, host)
                args = self.template(variables, judges.args)
                templar = Templar(loader=self.loader, variables=variables)
                # role_variables: the action reads its options from the role's variables, each string once; with
                # place, the host's llama_fleet_deployments too.
                strings: dict = {}  # the action's one cache of templated strings for both reads
                args = {**role_vars.judge_options(templar, variables, strings), **args}
                deployments = (templated(templar, variables["llama_fleet_deployments"], strings) if args["place"]
                               else None)
        assert len(args["instances"]) == 1, args["instances"]  # the hand-placed main: nothing placed yet
        assert len(deployments) == self.fleet.deployments
        assert deployments[0]["settings"]["host"] == self.fleet.address(self.all_hosts[-1]), deployments[0]
        # The hosts' side: each reachable host's judge (recorded), registered as the role does (the share's set_fact
        # below records its report).
        for host in self.reached:
            judged = judgement(self.fleet, host, placed[host], versions)
            self.variables.set_nonpersistent_facts(host, {"_llama_server_judgement": judged})
        with self.step("fleet_deploy"):
            placement, _variables = self.action_task(play, "Place the fleet's deployments", fleet_deployments, first)
            self.register(self.reached, "_llama_fleet_placed", placement)
        assert not placement.get("refused"), placement.get("msg")
        shares = self.task(play, "Give this host its replicas, and record the judgement")
        with self.step("host_facts"):
            for host in self.reached:
                self.variables.set_nonpersistent_facts(host, self.template(self.task_vars(play, shares, host),
                                                                           shares.args))

    def gateway_play(self, play: str, *, judged: bool = False) -> None:
        """The llama_gateway role on each gateway: the fleet's servers (controller), the configuration rendered and
        checked (the gateway host's module, once: every gateway renders the same file), the gateway's facts. With
        ``judged`` (the first gateway play), each gateway is judged first; the role runs on those that have work."""
        if judged:
            # The gateways are not fleet hosts: the judge play judged none of them, and the role runs on both.
            assert self.play_hosts(play, "gw_judge") == list(GATEWAYS)
        play = self.role_play(play)
        servers = self.task(play, "Keep the fleet's servers, their keys and the notes, once for the play's gateways")
        writes = self.task(play, "Write the gateway's Lua actions and configuration from the fleet's running instances")
        records = self.task(play, "Record the gateway's URL")
        written = None
        # The play's gateways route one fleet (llama_gateway_one_fleet): the first reads it, its facts go to all.
        with self.step("gw_servers"):
            fleet = self.template(self.task_vars(play, servers, GATEWAYS[0], list(GATEWAYS)), servers.args)
            assert "error" not in fleet["_llama_gateway_fleet"], fleet["_llama_gateway_fleet"]
        for host in GATEWAYS:
            with self.step("gw_servers"):
                self.variables.set_nonpersistent_facts(host, fleet)
            if written is None:
                with self.step("gw_render"):
                    variables = self.task_vars(play, writes, host, list(GATEWAYS))
                    args = self.template(variables, writes.args)
                    json.dumps(args)  # the module's arguments, as they travel to the gateway host
                    checked: list[float] = []
                    haproxy_check = functools.partial(timed_run, times=checked)
                    verified, _refused = runtime_api.server_names(args["verified"], runtime_api.DRAIN_TIMEOUT.default)
                    written = gateway.write_config({**args["settings"], "api_keys": args["api_keys"]},
                                                   args["servers"], args["server_keys"], args["keep_hosts"],
                                                   args["notes"], haproxy=HAPROXY, run=haproxy_check,
                                                   check_mode=False, diff=False, lua=args["lua"], verified=verified)
                # The check ran inside write_config: its time is the check's step, not the rendering's.
                self.times["gw_render"] -= sum(checked)
                self.times["haproxy_check"] += sum(checked)
            with self.step("gw_servers"):
                self.register([host], "_llama_gateway_config", written)
                self.variables.set_nonpersistent_facts(host, self.template(
                    self.task_vars(play, records, host, list(GATEWAYS)), records.args))

    def rollout_play(self) -> list[str]:
        play = "Order the rollout"
        with_work = self.play_hosts(play, "fleet_rollout")
        assert with_work, "a fleet-wide change has hosts with work"
        with self.step("fleet_rollout"):
            result, _variables = self.action_task(play, "Order the rollout's hosts in batches", fleet_rollout,
                                                  with_work[0])
            self.variables.set_host_facts("localhost", result["ansible_facts"])
            self.register(self.reached, "_llama_fleet_ordered", result)
        planned = result["ansible_facts"]["llama_fleet_rollout"]
        assert not planned["refusal"], planned["refusal"]
        return planned["order"]

    def rollout_done(self, order: list[str]) -> None:
        """The hosts' side of the rollout (recorded): each host's report says its instances run their plans."""
        for host in order:
            variables = self.hostvars[host]
            share = variables["llama_server_placed_instances"]
            judged = variables["_llama_server_judgement"]
            before = {row["instance"]: row for row in judged["report"]}
            rows = [report_row(self.fleet, host, "main", "gemma", 8080, state="deployed", runs_plan=True)]
            for instance in share:
                old = before.get(instance["name"])
                rows.append(report_row(self.fleet, host, instance["name"], instance["placement"]["deployment"],
                                       instance["port"], state="deployed", runs_plan=True,
                                       restarted=old is None or not old["runs_plan"], was_running=old is not None))
            self.variables.set_nonpersistent_facts(host, {"llama_server_report": rows, "llama_fleet_status": "ok"})

    def play_hosts(self, name: str, step: str = "removal_hosts") -> list[str]:
        """The hosts of a play whose ``hosts`` is a filter over hostvars, as the playbook templates it."""
        play = self.plays[name]
        with self.step(step):
            variables = self.variables.get_vars(play=play, host=None, task=None, _hosts=[], _hosts_all=[])
            return self.template(variables, play.hosts)

    def removal_hosts(self) -> list[str]:
        return self.play_hosts("Put the moved replicas in rotation before their old copies go")

    def removals_play(self) -> None:
        play = "Remove the replicas the placement no longer keeps"
        adds = self.task(play, "Add the replicas this host removes now to its instances, absent")
        removing = []
        hosts = self.play_hosts(play)
        with self.step("removals"):
            for host in hosts:
                variables = self.task_vars(play, adds, host)
                if not adds._resolve_conditional(adds.when, variables):
                    continue
                facts = self.template(variables, adds.args)
                self.variables.set_nonpersistent_facts(host, facts)
                removing.append(host)
        # The hosts' side (recorded): the removed replicas' rows say absent.
        for host in removing:
            report = list(self.hostvars[host]["llama_server_report"])
            report += [{"instance": name, "unit": f"llama-server-{name}.service", "state": "absent", "changed": True,
                        "restarted": False} for name in self.hostvars[host]["_llama_fleet_removals"]]
            self.variables.set_nonpersistent_facts(host, {"llama_server_report": report, "llama_fleet_status": "ok"})

    def report_play(self) -> dict:
        play = "Summarise the fleet"
        with self.step("fleet_report"):
            result, _variables = self.action_task(
                play, "Print and write the fleet summary, the ledger and the scrape targets", fleet_report,
                self.all_hosts[0])
        assert not result.get("failed"), result.get("msg")
        assert result["ledger"]["changed"], result["ledger"]
        assert result["metrics_targets"]["changed"], result["metrics_targets"]
        return result


def one_run(fleet: Fleet, inventory_path: str, playbook: Playbook, loader: DataLoader, *, placed: dict,
            versions: dict) -> dict[str, float]:
    """One deploy run over a fresh copy of the inventory and the previous run's files; the steps' times."""
    directory = os.path.dirname(inventory_path)
    for path, text in previous_files(fleet, placed, versions, directory).items():
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    routes = os.path.join(directory, "gateway", "haproxy.cfg")
    for path in (routes, config_file.routes_path(routes)):
        if os.path.exists(path):
            os.unlink(path)
    with open(config_file.routes_path(routes), "w", encoding="utf-8") as handle:
        handle.write(previous_routes(fleet, placed))
    inventory = InventoryManager(loader=loader, sources=[inventory_path])
    run = PlaybookRun(fleet, inventory_path, playbook, loader, inventory)
    run.judge_play(placed, versions)
    run.gateway_play("Configure the fleet's gateways from what runs", judged=True)
    order = run.rollout_play()
    run.rollout_done(order)
    gateways = run.removal_hosts()
    assert list(gateways) == list(GATEWAYS) or not fleet.cordoned, gateways
    if gateways:
        run.gateway_play("Put the moved replicas in rotation before their old copies go")
    run.removals_play()
    after = "Configure the fleet's gateways from what runs after the rollout"
    assert list(run.play_hosts(after)) == list(GATEWAYS), "a run that rolls out configures its gateways again"
    run.gateway_play(after)
    run.report_play()
    run.times["total"] = sum(run.times[step] for step in STEPS)
    return run.times


def measure(size: int, instances: int, runs: int) -> dict:
    """One size, in this process: the median of each step over the runs, and this process's peak RSS."""
    fleet = Fleet.of(size, instances)
    with tempfile.TemporaryDirectory(prefix="fleet-scale-") as directory:
        inventory_path = write_inventory(fleet, directory)
        loader = DataLoader()
        playbook = Playbook.load(PLAYBOOK, variable_manager=VariableManager(loader=loader), loader=loader)
        with open(os.path.join(directory, "group_vars", "llama_fleet.yml"), encoding="utf-8") as handle:
            group_vars = json.load(handle)
        versions = deployment_versions(group_vars["llama_fleet_deployments"], group_vars["llama_server_presets"])
        placed = fleet.placed()
        times = [one_run(fleet, inventory_path, playbook, loader, placed=copy.deepcopy(placed),
                         versions=versions)
                 for _run in range(runs)]
    median = {step: statistics.median(run[step] for run in times) for step in times[0]}
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"size": size, "instances": instances, "deployments": fleet.deployments, "replicas": fleet.replicas,
            "times": median, "peak_mib": peak_kib / 1024}


def per_host_growth(before: dict, after: dict, step: str) -> str:
    """How the step's time per host grows from one size to another (x1.00: linear)."""
    if before["times"][step] <= 0:
        return "-"
    ratio = (after["times"][step] / after["size"]) / (before["times"][step] / before["size"])
    return f"x{ratio:.2f}"


def print_table(results: list[dict], runs: int) -> None:
    first, last = results[0], results[-1]
    print(f"controller work of one deploy run, median of {runs} run(s), {first['instances']} placed replicas per "
          f"host ({', '.join(str(r['deployments']) + ' x ' + str(r['replicas']) for r in results)} deployments x "
          "replicas); ms per step, then how the step's time per host grows")
    pairs = list(itertools.pairwise(results))
    if len(results) > 2:
        pairs.append((first, last))
    header = f"{'step':<14}" + "".join(f"{str(result['size']) + ' hosts':>12}" for result in results)
    header += f"{'µs/host':>9}" + "".join(f"{str(before['size']) + '->' + str(after['size']):>11}"
                                          for before, after in pairs)
    print(header)
    for step in (*STEPS, "total"):
        cells = "".join(f"{result['times'][step] * 1e3:>12.1f}" for result in results)
        cells += f"{last['times'][step] / last['size'] * 1e6:>9.0f}"
        cells += "".join(f"{per_host_growth(before, after, step):>11}" for before, after in pairs)
        print(f"{step:<14}{cells}")
    print(f"{'ms per host':<14}" + "".join(f"{r['times']['total'] / r['size'] * 1e3:>12.2f}" for r in results))
    print(f"{'peak MiB':<14}" + "".join(f"{r['peak_mib']:>12.0f}" for r in results))
    if len(results) > 1:
        print(f"time per host grows {per_host_growth(first, last, 'total')} from {first['size']} to {last['size']} "
              f"hosts (x1.00 is linear; the target is at most x1.5); total at {last['size']} hosts: "
              f"{last['times']['total']:.1f} s, peak {last['peak_mib']:.0f} MiB (targets: 60 s, 1024 MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,300,1000")
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--one-size", type=int, help=argparse.SUPPRESS)  # the child's part: one size, as JSON
    args = parser.parse_args()
    if args.one_size:
        print(json.dumps(measure(args.one_size, args.instances, args.runs)))
        return
    results = []
    for size in (int(text) for text in args.sizes.split(",")):
        # A child per size: its peak memory is its own, and no cache of one size helps the next.
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--one-size", str(size), "--instances",
                               str(args.instances), "--runs", str(args.runs)], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            sys.exit(f"size {size} failed:\n{done.stderr[-4000:]}")
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print_table(results, args.runs)


if __name__ == "__main__":
    main()
