"""Time a no-op re-converge of the local fleet against a floor playbook on the same hosts, and a preset change.

The systemd fleet is the one of `make deploy-local`: the hand-placed instance, the deployments of
playbooks/vars/local-fleet.yml (placed by memory) and the gateway on the first host.

Usage: .venv/bin/python bench/reconverge.py [--runs N] [--sizes 2,8] [--model tiny|gemma] [--runtime systemd|compose]

For each fleet size (scripts/fleet.sh up N; FLEET_SIZE sets the default size) it deploys once, then runs,
alternately, the real rollout (playbooks/deploy-llm.yml with the local fleet's variables: it must report
changed=0 and 0 restarts on every host) and a floor playbook that only connects to each host and stats the unit
file (ping + stat: the cost any playbook pays), and prints the median of each, their ratio, the tasks a no-op
runs per host and the lines it prints per host. Then it times a one-preset change (CTX 4096 -> 2048 on every
host, canary first, then the rest) and changes it back. With several sizes it prints how the no-op grows.

With ``--runtime compose`` the hosts are this machine, N times over (local connection): each inventory host has
its own compose project, directories, port and instance name on the private Docker engine of
scripts/compose_artifacts.sh, as the compose molecule scenario's one host has. The floor is then measured on those
same local hosts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

TREE = conftest.collection_path()
CACHE = os.environ.get("LLAMAFLEET_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "llamafleet"))
FLOOR = [
    {
        "name": "Floor: connect and stat the unit",
        "hosts": "llama_fleet",
        "gather_facts": False,
        "tasks": [
            {"name": "Ping", "ansible.builtin.ping": {}},
            {
                "name": "Stat the unit",
                "ansible.builtin.stat": {"path": "/etc/systemd/system/llama-server-main.service"},
            },
        ],
    }
]


def run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])}… failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return seconds, proc.stdout


def recap(output: str) -> dict[str, tuple[int, int]]:
    """{host: (tasks run, changed)} from a PLAY RECAP (ok + changed + failed + skipped counts tasks)."""
    found = {}
    for line in output.splitlines():
        match = re.match(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)\s+skipped=(\d+)", line)
        if match and match.group(1) != "localhost":
            ok, changed, failed, skipped = (int(match.group(i)) for i in (2, 3, 4, 5))
            found[match.group(1)] = (ok + failed + skipped, changed)
    return found


def restarted(summary: str) -> int:
    match = re.search(r"(\d+) restarted", summary)
    return int(match.group(1)) if match else -1


def presets(ctx: int, role_vars: str) -> str:
    """The role variables' presets with the hand-placed instance's one at ``ctx`` (-e replaces the whole variable:
    every other preset, the deployments' included, is given again as it is)."""
    with open(role_vars, encoding="utf-8") as handle:
        found = json.load(handle) if role_vars.endswith(".json") else yaml.safe_load(handle)
    given = dict(found["llama_server_presets"])
    name = next(iter(given))  # the hand-placed instance's preset comes first
    given[name] = {**given[name], "ctx": ctx}
    return json.dumps({"llama_server_presets": given})


COMPOSE_ROOT = "/var/tmp/llamafleet-bench-compose"


def compose_hosts(size: int, env: dict[str, str], tmp: str) -> tuple[str, str]:
    """An inventory of ``size`` local hosts, each with its own compose project, configuration directory, port and
    instance name, and the role's variables (one service account, home, venv and models directory for all)."""
    share = env["LLAMAFLEET_FLEET_SHARE"]
    # The Docker engine running, the engine's image imported, docker.json written.
    described = subprocess.run([os.path.join(ROOT, "scripts", "compose_artifacts.sh"), share], check=True,
                               capture_output=True, text=True, env=env).stdout.strip()
    with open(described, encoding="utf-8") as handle:
        docker = json.load(handle)
    lines = ["[llama_fleet]"]
    for index in range(1, size + 1):
        root = f"{COMPOSE_ROOT}/h{index}"
        lines.append(f"bench-compose-{index} ansible_connection=local ansible_python_interpreter=/usr/bin/python3 "
                     f"ansible_become=false bench_index={index} "
                     f"llama_server_config_dir={root}/etc llama_server_plan_cache_dir={root}/cache "
                     f"llama_server_compose_project=llamafleet-bench-{index}")
    inventory = os.path.join(tmp, f"compose-{size}.ini")
    with open(inventory, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    role_vars = {
        "llama_fleet_share": share,
        "llama_fleet_artifacts": "{{ lookup('ansible.builtin.file', llama_fleet_share ~ '/artifacts.json') "
                                 "| from_json }}",
        "llama_server_runtime": "compose",
        "llama_server_image": docker["image"],
        "llama_server_image_pull": "never",
        "llama_server_docker_host": docker["docker_host"],
        "llama_server_docker_config": docker["docker_config"],
        # One service account, and so one home, for all of this machine's "hosts" (instances differ by name).
        "llama_server_user": "llamafleet-bench",
        "llama_server_group": "llamafleet-bench",
        "llama_server_home": f"{COMPOSE_ROOT}/home",
        "llama_server_venv": f"{COMPOSE_ROOT}/venv",
        "llama_server_models_dir": f"{COMPOSE_ROOT}/models",
        "llama_server_module_wheels_dir": "{{ llama_fleet_artifacts.wheels_dir }}",
        "llama_server_models": [{"url": "file://{{ llama_fleet_share }}/{{ llama_fleet_artifacts.model }}",
                                 "checksum": "{{ llama_fleet_artifacts.model_checksum }}"}],
        "llama_server_presets": {"gemma": {"model": "{{ llama_fleet_artifacts.model }}", "ctx": 4096,
                                           "threads": 1}},
        # One container name per host: the hosts share one Docker engine.
        "llama_server_instances": [{"name": "bench{{ bench_index }}", "preset": "gemma", "host": "127.0.0.1",
                                    "port": "{{ 18400 + bench_index | int }}",
                                    "api_key": "llf-bench-{{ bench_index }}-compose-key"}],
    }
    role_vars_file = os.path.join(tmp, "compose-vars.json")
    with open(role_vars_file, "w", encoding="utf-8") as handle:
        json.dump(role_vars, handle)
    return inventory, role_vars_file


def compose_cleanup(size: int, env: dict[str, str]) -> None:
    share = env["LLAMAFLEET_FLEET_SHARE"]
    with open(os.path.join(share, "docker.json"), encoding="utf-8") as handle:
        docker = json.load(handle)
    names = [f"llama-server-bench{index}" for index in range(1, size + 1)]
    subprocess.run(["docker", "rm", "--force", *names], env={**env, "DOCKER_HOST": docker["docker_host"]},
                   capture_output=True, check=False)
    shutil.rmtree(COMPOSE_ROOT, ignore_errors=True)


def hosts_for(runtime: str, size: int, env: dict[str, str], tmp: str) -> tuple[str, str]:
    """The inventory and the role's variables file of a fleet of ``size`` hosts."""
    if runtime == "compose":
        return compose_hosts(size, env, tmp)
    fleet = os.path.join(ROOT, "scripts", "fleet.sh")
    # The fleet's hosts bind the share (engine archive, model, wheels) read-only: fleet.sh needs it named.
    subprocess.run([fleet, "up", str(size)], check=True, capture_output=True, text=True, env=env)
    inventory = subprocess.run([fleet, "inventory"], capture_output=True, text=True, check=True,
                               env=env).stdout.strip()
    # The fleet's gateway on the first host, as make deploy-local has it (scripts/local_fleet.sh).
    first = json.loads(subprocess.run([fleet, "hosts"], capture_output=True, text=True, check=True,
                                      env=env).stdout)["hosts"][0]["name"]
    gateway = os.path.join(tmp, f"gateway-{size}.ini")
    with open(gateway, "w", encoding="utf-8") as handle:
        handle.write(f"[llama_fleet_gateway]\n{first}\n")
    return f"{inventory},{gateway}", os.path.join(ROOT, "playbooks", "vars", "local-fleet.yml")


def measure(size: int, runs: int, env: dict[str, str], tmp: str, runtime: str = "systemd") -> dict:
    inventory, role_vars = hosts_for(runtime, size, env, tmp)
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    floor = os.path.join(tmp, "floor.yml")
    with open(floor, "w", encoding="utf-8") as handle:
        json.dump(FLOOR, handle)
    summary = os.path.join(tmp, "summary.md")
    inventories = [part for path in inventory.split(",") for part in ("-i", path)]
    rollout = [playbook_bin, *inventories, os.path.join(ROOT, "playbooks", "deploy-llm.yml"),
               "-e", "@" + role_vars, "-e", "llama_fleet_summary_path=" + summary,
               "-e", "llama_fleet_ledger_path=" + os.path.join(tmp, f"ledger-{runtime}-{size}.json")]
    first, _output = run(rollout, env)  # the deployment itself (or a no-op when it is there already)
    commands = {"floor (ping + stat)": [playbook_bin, "-i", inventory.split(",")[0], floor],
                "no-op re-converge": rollout}
    times: dict[str, list[float]] = {label: [] for label in commands}
    tasks: dict[str, int] = {}
    lines = 0
    for _run in range(runs):
        for label, command in commands.items():
            seconds, output = run(command, env)
            if label == "no-op re-converge":
                counted = recap(output)
                with open(summary, encoding="utf-8") as handle:
                    restarts = restarted(handle.read())
                if len(counted) != size or any(c for _t, c in counted.values()) or restarts != 0:
                    raise SystemExit(f"the re-converge was not a no-op: {counted}, {restarts} restarted")
                tasks = {host: t for host, (t, _c) in counted.items()}
                lines = len(output.splitlines())
            times[label].append(seconds)
    change, output = run([*rollout, "-e", presets(2048, role_vars)], env)
    with open(summary, encoding="utf-8") as handle:
        changed_restarts = restarted(handle.read())
    back, _output = run([*rollout, "-e", presets(4096, role_vars)], env)
    medians = {label: statistics.median(values) for label, values in times.items()}
    return {"size": size, "first": first, "medians": medians, "best": {k: min(v) for k, v in times.items()},
            "tasks": tasks, "lines": lines, "change": change, "change_restarts": changed_restarts, "back": back}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default=os.environ.get("FLEET_SIZE", "2"),
                        help="comma-separated fleet sizes, e.g. 2,8")
    parser.add_argument("--runtime", choices=("systemd", "compose"), default="systemd",
                        help="systemd: nspawn hosts (scripts/fleet.sh); compose: this machine as N local hosts, each "
                             "with its own compose project on the private Docker engine")
    parser.add_argument("--model", choices=("tiny", "gemma"), default="tiny",
                        help="what the hosts serve: the tiny random model (default; the bench measures the "
                             "deployment, not the answers) or Gemma-3-270M")
    args = parser.parse_args()
    env = dict(
        os.environ,
        LLAMAFLEET_FLEET_MODEL=args.model,
        ANSIBLE_COLLECTIONS_PATH=TREE,
        ANSIBLE_NOCOLOR="1",
        # What an operator sees: changes, failures and the summary (the lines per host printed below).
        ANSIBLE_STDOUT_CALLBACK="llamafleet.llamacpp.fleet",
        LLAMAFLEET_FLEET_SHARE=os.environ.get("LLAMAFLEET_FLEET_SHARE", os.path.join(CACHE, "fleet-share")),
        LLAMAFLEET_DEMO_KEY_FILE=os.environ.get(
            "LLAMAFLEET_DEMO_KEY_FILE", os.path.join(CACHE, "fleet", "demo-api-key")
        ),
    )
    # The local fleet's key, as make deploy-local makes it (random, root only), when no run made it yet.
    key_file = env["LLAMAFLEET_DEMO_KEY_FILE"]
    if not os.path.exists(key_file):
        os.makedirs(os.path.dirname(key_file), exist_ok=True)
        descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write("llf-" + secrets.token_urlsafe(24))
    # The share's artifacts.json names the model the hosts fetch; write it for this run's choice.
    subprocess.run([os.path.join(ROOT, "scripts", "fleet_artifacts.sh"), env["LLAMAFLEET_FLEET_SHARE"]],
                   check=True, capture_output=True, text=True, env=env)
    print(f"model: {args.model}; runtime: {args.runtime}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            try:
                found = measure(size, args.runs, env, tmp, args.runtime)
            finally:
                if args.runtime == "compose":
                    compose_cleanup(size, env)
            results.append(found)
            floor, noop = found["medians"]["floor (ping + stat)"], found["medians"]["no-op re-converge"]
            print(f"{size} hosts: floor (ping + stat) median {floor:.2f} s, no-op re-converge median {noop:.2f} s "
                  f"over {args.runs} runs; ratio {noop / floor:.2f}; 0 restarts")
            print(f"  tasks per host on a no-op: {sorted(set(found['tasks'].values()))}; "
                  f"{found['lines'] / size:.1f} output lines per host")
            print(f"  one-preset change (CTX 4096 -> 2048, canary first, then the rest): {found['change']:.1f} s, "
                  f"{found['change'] / size:.1f} s per host, {found['change_restarts']} restarted; "
                  f"back: {found['back']:.1f} s")
    if len(results) > 1:
        small, large = results[0], results[-1]
        growth = large["medians"]["no-op re-converge"] / small["medians"]["no-op re-converge"]
        print(f"no-op growth {small['size']} -> {large['size']} hosts: {growth:.2f}x "
              f"({small['medians']['no-op re-converge']:.2f} s -> {large['medians']['no-op re-converge']:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
