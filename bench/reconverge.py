"""Time a no-op re-converge of the local fleet against a floor playbook on the same hosts, and a preset change.

Usage: .venv/bin/python bench/reconverge.py [--runs N] [--sizes 2,8] [--model tiny|gemma]

For each fleet size (scripts/fleet.sh up N; FLEET_SIZE sets the default size) it deploys once, then runs,
alternately, the real rollout (playbooks/deploy-llm.yml with the local fleet's variables: it must report
changed=0 and 0 restarts on every host) and a floor playbook that only connects to each host and stats the unit
file (ping + stat: the cost any playbook pays), and prints the median of each, their ratio, the tasks a no-op
runs per host and the lines it prints per host. Then it times a one-preset change (CTX 4096 -> 2048 on every
host, canary first, then the rest) and changes it back. With several sizes it prints how the no-op grows.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

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


def presets(ctx: int) -> str:
    return json.dumps({"llama_server_presets": {"gemma": {"model": "{{ llama_fleet_artifacts.model }}",
                                                          "ctx": ctx, "threads": 1}}})


def measure(size: int, runs: int, env: dict[str, str], tmp: str) -> dict:
    fleet = os.path.join(ROOT, "scripts", "fleet.sh")
    # The fleet's hosts bind the share (engine archive, model, wheels) read-only: fleet.sh needs it named.
    subprocess.run([fleet, "up", str(size)], check=True, capture_output=True, text=True, env=env)
    inventory = subprocess.run([fleet, "inventory"], capture_output=True, text=True, check=True,
                               env=env).stdout.strip()
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    floor = os.path.join(tmp, "floor.yml")
    with open(floor, "w", encoding="utf-8") as handle:
        json.dump(FLOOR, handle)
    summary = os.path.join(tmp, "summary.md")
    rollout = [playbook_bin, "-i", inventory, os.path.join(ROOT, "playbooks", "deploy-llm.yml"),
               "-e", "@" + os.path.join(ROOT, "playbooks", "vars", "local-fleet.yml"),
               "-e", "llama_fleet_summary_path=" + summary]
    first, _output = run(rollout, env)  # the deployment itself (or a no-op when it is there already)
    commands = {"floor (ping + stat)": [playbook_bin, "-i", inventory, floor], "no-op re-converge": rollout}
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
    change, output = run([*rollout, "-e", presets(2048)], env)
    with open(summary, encoding="utf-8") as handle:
        changed_restarts = restarted(handle.read())
    back, _output = run([*rollout, "-e", presets(4096)], env)
    medians = {label: statistics.median(values) for label, values in times.items()}
    return {"size": size, "first": first, "medians": medians, "best": {k: min(v) for k, v in times.items()},
            "tasks": tasks, "lines": lines, "change": change, "change_restarts": changed_restarts, "back": back}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default=os.environ.get("FLEET_SIZE", "2"),
                        help="comma-separated fleet sizes, e.g. 2,8")
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
    # The share's artifacts.json names the model the hosts fetch; write it for this run's choice.
    subprocess.run([os.path.join(ROOT, "scripts", "fleet_artifacts.sh"), env["LLAMAFLEET_FLEET_SHARE"]],
                   check=True, capture_output=True, text=True, env=env)
    print(f"model: {args.model}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            found = measure(size, args.runs, env, tmp)
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
