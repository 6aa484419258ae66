"""Time llama_server_plan's probe+plan, cold and warm, and the module through Ansible against a floor.

Usage: .venv/bin/python bench/module_plan.py ENGINE_DIR MODEL.gguf [--runs N]

1. In process: probe_and_plan() on this host with the real engine and model,
   once with an empty engine cache (cold: runs llama-server --help) and N times
   warm (engine-text cache hit: the engine is not executed; the GGUF header is
   read again each time, as in a fresh module process). Best and median are printed.
2. Through Ansible: `ansible-playbook` running one llama_server_plan task
   (warm cache) next to the same playbook with `ansible.builtin.ping` (the
   floor: process start, inventory, connection, module transfer). Medians of N
   runs each, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

TREE = conftest.collection_path()

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import gguf_meta  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.probe_host import (  # noqa: E402
    ProbeOptions,
    probe_and_plan,
)


def timed(func) -> tuple[float, object]:
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def in_process(engine: str, model: str, home: str, runs: int) -> None:
    options = ProbeOptions(
        preset={"MODEL": os.path.basename(model), "CTX": "4096", "SPEC": "auto"},
        bin=os.path.join(engine, "llama-server"),
        home=home,
        model_dirs=[os.path.dirname(model)],
    )
    cold_s, cold = timed(lambda: probe_and_plan(options))
    warm = []
    for _run in range(runs):
        # Each module run is a new process: the in-process GGUF cache never helps it.
        gguf_meta.clear_cache()
        seconds, result = timed(lambda: probe_and_plan(options))
        if result.engine_runs != 0:
            raise SystemExit(f"warm run executed the engine {result.engine_runs} times")
        warm.append(seconds)
    print(f"probe+plan in process: cold {cold_s * 1000:.1f} ms ({cold.engine_runs} engine runs), "
          f"warm best {min(warm) * 1000:.1f} ms, median {statistics.median(warm) * 1000:.1f} ms "
          f"over {runs} runs (0 engine runs)")


def playbook(tmp: str, name: str, task: dict) -> str:
    path = os.path.join(tmp, f"{name}.yml")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump([{"name": name, "hosts": "localhost", "gather_facts": False, "tasks": [task]}], handle)
    return path


def through_ansible(engine: str, model: str, home: str, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        inventory = os.path.join(tmp, "inventory.ini")
        with open(inventory, "w", encoding="utf-8") as handle:
            handle.write(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
        plan_args = {
            "bin": os.path.join(engine, "llama-server"),
            "home": home,
            "model_dirs": [os.path.dirname(model)],
            "preset": {"MODEL": os.path.basename(model), "CTX": 4096, "SPEC": "auto"},
        }
        books = {
            "floor (ping)": playbook(tmp, "floor", {"name": "Ping", "ansible.builtin.ping": {}}),
            "llama_server_plan": playbook(
                tmp, "plan", {"name": "Plan", "llamafleet.llamacpp.llama_server_plan": plan_args}
            ),
        }
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=TREE, ANSIBLE_NOCOLOR="1")
        command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory]
        medians = {}
        for label, book in books.items():
            times = []
            for _run in range(runs):
                seconds, proc = timed(lambda b=book: subprocess.run(
                    [*command, b], env=env, capture_output=True, text=True, check=False))
                if proc.returncode != 0:
                    raise SystemExit(f"{label} failed:\n{proc.stdout}\n{proc.stderr}")
                times.append(seconds)
            medians[label] = statistics.median(times)
            print(f"ansible-playbook, {label}: median {medians[label]:.2f} s over {runs} runs")
        ratio = medians["llama_server_plan"] / medians["floor (ping)"]
        print(f"ratio llama_server_plan / ping: {ratio:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine_dir")
    parser.add_argument("model")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        in_process(args.engine_dir, args.model, home, args.runs)
        through_ansible(args.engine_dir, args.model, home, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
