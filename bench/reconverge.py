"""Time a no-op re-converge of the local fleet against a floor playbook on the same hosts.

Usage: .venv/bin/python bench/reconverge.py [--runs N]

Needs the local fleet deployed (`make deploy-local`). Runs, alternately, the
real rollout (playbooks/deploy-llm.yml with the local fleet's variables: it must
report changed=0 on every host) and a floor playbook that only connects to each
host and stats the unit file (ping + stat: the cost any playbook pays), then
prints the median of each and their ratio.
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
RECAP = re.compile(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


def run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])}… failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return seconds, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    inventory = subprocess.run(
        [os.path.join(ROOT, "scripts", "fleet.sh"), "inventory"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=TREE,
        ANSIBLE_NOCOLOR="1",
        LLAMAFLEET_FLEET_SHARE=os.environ.get("LLAMAFLEET_FLEET_SHARE", os.path.join(CACHE, "fleet-share")),
        LLAMAFLEET_DEMO_KEY_FILE=os.environ.get(
            "LLAMAFLEET_DEMO_KEY_FILE", os.path.join(CACHE, "fleet", "demo-api-key")
        ),
    )
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    with tempfile.TemporaryDirectory() as tmp:
        floor = os.path.join(tmp, "floor.yml")
        with open(floor, "w", encoding="utf-8") as handle:
            json.dump(FLOOR, handle)
        commands = {
            "floor (ping + stat)": [playbook_bin, "-i", inventory, floor],
            "re-converge (deploy-llm.yml)": [
                playbook_bin, "-i", inventory, os.path.join(ROOT, "playbooks", "deploy-llm.yml"),
                "-e", "@" + os.path.join(ROOT, "playbooks", "vars", "local-fleet.yml"),
                "-e", "llama_fleet_summary_path=" + os.path.join(tmp, "summary.md"),
            ],
        }
        times: dict[str, list[float]] = {label: [] for label in commands}
        for _run in range(args.runs):
            for label, command in commands.items():
                seconds, output = run(command, env)
                hosts = RECAP.findall(output)
                if label.startswith("re-converge"):
                    changed = {host: int(c) for host, c, _u, _f in hosts if host != "localhost"}
                    if not changed or any(changed.values()):
                        raise SystemExit(f"the re-converge was not a no-op: changed={changed}")
                times[label].append(seconds)
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, median in medians.items():
        print(f"{label}: median {median:.2f} s over {args.runs} runs (best {min(times[label]):.2f} s)")
    ratio = medians["re-converge (deploy-llm.yml)"] / medians["floor (ping + stat)"]
    print(f"ratio re-converge / floor: {ratio:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
