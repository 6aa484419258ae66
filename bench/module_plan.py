"""Time llama_server_plan's probe+plan, cold and warm, and the module through Ansible against a floor.

Usage: .venv/bin/python bench/module_plan.py ENGINE_DIR MODEL.gguf [--runs N] [--docker-json PATH]

1. In process: probe_and_plan() on this host with the real engine and model,
   once with an empty engine cache (cold: runs llama-server --help) and N times
   warm (engine-text cache hit: the engine is not executed; the GGUF header is
   read again each time, as in a fresh module process). Best and median are printed.
   With --docker-json (scripts/compose_artifacts.sh's docker.json) the same for the
   compose runtime, where the help comes from the engine's image (`docker run`
   per text when cold; one `docker image inspect` when warm), and the ratios to the
   binary, measured in the same run.
2. The preflight (the planned argv through the engine's own parser): the same probe+plan with and
   without it, side by side, cold (one more engine start) and warm (its cached pass: 0 starts).
3. Through Ansible: `ansible-playbook` running one llama_server_plan task
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
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.docker import DockerAccess  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (  # noqa: E402
    binary_launcher,
    engine_env,
    run_preflight,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import (  # noqa: E402
    ProbeOptions,
    probe_and_plan,
)


def timed(func) -> tuple[float, object]:
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def in_process(label: str, options: ProbeOptions, runs: int) -> tuple[float, float]:
    """Cold then ``runs`` warm probe+plans; returns (cold seconds, warm median seconds)."""
    cold_s, cold = timed(lambda: probe_and_plan(options))
    warm = []
    for _run in range(runs):
        # Each module run is a new process: the in-process GGUF cache never helps it.
        gguf_meta.clear_cache()
        seconds, result = timed(lambda: probe_and_plan(options))
        if result.engine_runs != 0:
            raise SystemExit(f"{label}: warm run executed the engine {result.engine_runs} times")
        warm.append(seconds)
    print(f"probe+plan in process, {label}: cold {cold_s * 1000:.1f} ms ({cold.engine_runs} engine runs), "
          f"warm best {min(warm) * 1000:.1f} ms, median {statistics.median(warm) * 1000:.1f} ms "
          f"over {runs} runs (0 engine runs)")
    return cold_s, statistics.median(warm)


def preflight_cost(engine: str, model: str, runs: int) -> None:
    """Probe+plan with and without the preflight, cold and warm, interleaved in one run (medians).

    Cold: a fresh cache directory each time (help, version and preflight run the engine); warm: the same one.
    """
    cold: dict[bool, list[float]] = {False: [], True: []}
    warm: dict[bool, list[float]] = {False: [], True: []}
    starts: dict[bool, int] = {}
    probe_and_plan(binary_options(engine, model, tempfile.mkdtemp()))  # imports and page cache, not counted
    for _run in range(runs):
        for preflight in (False, True):
            with tempfile.TemporaryDirectory() as home:
                options = binary_options(engine, model, home)
                options.preflight = preflight
                gguf_meta.clear_cache()  # each module run is a new process: no GGUF cache, cold or warm
                seconds, result = timed(lambda o=options: probe_and_plan(o))
                cold[preflight].append(seconds)
                starts[preflight] = result.engine_runs
                gguf_meta.clear_cache()
                seconds, result = timed(lambda o=options: probe_and_plan(o))
                if result.engine_runs:
                    raise SystemExit(f"warm run started the engine {result.engine_runs} times")
                warm[preflight].append(seconds)
    # The preflight alone, on the plan just made: one engine start, then its cached pass.
    plan = result.plan
    launcher = binary_launcher(plan.argv[0], engine_env(plan.argv[0], plan.env))
    alone_cold, alone_cached = [], []
    for _run in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            def once(c=cache):
                return run_preflight(launcher, plan.argv, plan.decisions.preflight_swaps, cache_dir=c)

            alone_cold.append(timed(once)[0])
            alone_cached.append(timed(once)[0])
    print(f"run_preflight alone: {statistics.median(alone_cold) * 1000:.1f} ms (1 engine start), cached pass "
          f"{statistics.median(alone_cached) * 1000:.2f} ms (medians of {runs})")
    c = {k: statistics.median(v) * 1000 for k, v in cold.items()}
    w = {k: statistics.median(v) * 1000 for k, v in warm.items()}
    print(f"probe+plan without preflight: cold {c[False]:.1f} ms ({starts[False]} engine starts), "
          f"warm {w[False]:.1f} ms (0)")
    print(f"probe+plan with preflight:    cold {c[True]:.1f} ms ({starts[True]} engine starts), "
          f"warm {w[True]:.1f} ms (0)")
    print(f"preflight cost: cold +{c[True] - c[False]:.1f} ms (1 engine start), warm +{w[True] - w[False]:.1f} ms "
          f"(its cached pass); ratio with/without: cold {c[True] / c[False]:.2f}, warm {w[True] / w[False]:.2f} "
          f"(medians of {runs})")


def binary_options(engine: str, model: str, home: str) -> ProbeOptions:
    return ProbeOptions(
        preset={"MODEL": os.path.basename(model), "CTX": "4096", "SPEC": "auto"},
        bin=os.path.join(engine, "llama-server"),
        home=home,
        model_dirs=[os.path.dirname(model)],
    )


def image_options(docker_json: str, model: str, home: str) -> ProbeOptions:
    with open(docker_json, encoding="utf-8") as handle:
        docker = json.load(handle)
    return ProbeOptions(
        preset={"MODEL": os.path.basename(model), "CTX": "4096", "SPEC": "auto"},
        bin="/app/llama-server",
        home=home,
        model_dirs=[os.path.dirname(model)],
        engine_image=docker["image"],
        docker=DockerAccess(host=docker["docker_host"]),
    )


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
    parser.add_argument("--docker-json", default="")
    args = parser.parse_args()
    preflight_cost(args.engine_dir, args.model, args.runs)
    with tempfile.TemporaryDirectory() as home:
        binary = in_process("binary", binary_options(args.engine_dir, args.model, home), args.runs)
        if args.docker_json:
            with tempfile.TemporaryDirectory() as image_home:
                image = in_process("image", image_options(args.docker_json, args.model, image_home), args.runs)
            print(f"ratio image / binary: cold {image[0] / binary[0]:.1f}, warm {image[1] / binary[1]:.2f}")
        through_ansible(args.engine_dir, args.model, home, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
