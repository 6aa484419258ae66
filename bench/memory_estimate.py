"""The memory estimate of one launch against the engine's own projection and against what the engine uses.

Usage: .venv/bin/python bench/memory_estimate.py [--engine-dir DIR] [--models gemma,tiny] [--contexts 2048,4096,...]
                                                 [--slots 1,4] [--rss]

For each model and context (and slot count) it prints three figures, in MiB:

* ours: _planner/memory_estimate.estimate, from the GGUF header and the launch's context, slots and micro-batch;
* engine: ``llama-fit-params --fit-print on`` (built next to llama-server by scripts/build_engine.sh), llama.cpp's
  projection of the same launch without loading the weights (model + context + compute, per device);
* used (--rss): the resident memory of llama-server started with the same arguments, once /health answers and one
  completion has run (so the compute buffer and the weights' pages are touched).

and the ratios ours / engine (never below 0.95 is the rule) and ours / used. CPU only here: every figure is the
host's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

conftest.collection_path()
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.memory_estimate import (  # noqa: E402
    estimate,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.gguf_meta import read_gguf_info  # noqa: E402

CACHE = os.environ.get("LLAMAFLEET_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "llamafleet"))


def model_paths() -> dict[str, str]:
    models = os.path.join(CACHE, "models")
    found = {}
    for name in sorted(os.listdir(models)):
        if name.startswith("gemma-3-270m") and name.endswith(".gguf"):
            found["gemma"] = os.path.join(models, name)
        elif name.startswith("tiny-") and name.endswith(".gguf"):
            found["tiny"] = os.path.join(models, name)
    return found


def engine_projection(engine_dir: str, model: str, ctx: int, slots: int) -> dict[str, list[int]]:
    """llama-fit-params' rows: device -> [model, context, compute] MiB."""
    done = subprocess.run(
        [os.path.join(engine_dir, "llama-fit-params"), "--fit-print", "on", "-m", model, "-c", str(ctx),
         "-np", str(slots), "-t", "1"], capture_output=True, text=True, timeout=300, check=False,
        env={"LD_LIBRARY_PATH": engine_dir, "PATH": "/usr/bin:/bin"})
    if done.returncode != 0:
        raise RuntimeError(f"llama-fit-params exited {done.returncode}: {done.stderr[-500:]}")
    rows = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) >= 4 and all(word.isdigit() for word in words[-3:]):
            rows[" ".join(words[:-3])] = [int(word) for word in words[-3:]]
    return rows


def resident_mib(engine_dir: str, model: str, ctx: int, slots: int) -> int:
    """VmRSS of llama-server with these arguments, after /health and one completion."""
    with subprocess.Popen(["/bin/sh", "-c", "exit 0"]) as probe:
        probe.wait()
    port = 18000 + (os.getpid() % 1000)
    proc = subprocess.Popen(
        [os.path.join(engine_dir, "llama-server"), "-m", model, "-c", str(ctx), "-np", str(slots), "-t", "2",
         "--host", "127.0.0.1", "--port", str(port)],
        env={"LD_LIBRARY_PATH": engine_dir, "PATH": "/usr/bin:/bin"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        body = json.dumps({"prompt": "The capital of France is", "n_predict": 8}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            answer.read()
        with open(f"/proc/{proc.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
        return 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine-dir", default=os.environ.get("LLAMAFLEET_ENGINE_DIR", ""))
    parser.add_argument("--models", default="gemma,tiny")
    parser.add_argument("--contexts", default="2048,4096,8192,16384,32768")
    parser.add_argument("--slots", default="1,4")
    parser.add_argument("--rss", action="store_true")
    args = parser.parse_args()
    engine_dir = args.engine_dir or subprocess.run(
        [os.path.join(ROOT, "scripts", "build_engine.sh"), "current"], capture_output=True, text=True,
        check=True).stdout.strip()
    paths = model_paths()
    print(f"{'model':<6} {'ctx':>6} {'slots':>5} | {'engine m/c/x':>16} {'total':>6} | {'ours m/c/x':>16} "
          f"{'total':>6} {'ours/eng':>8}" + (f" | {'used':>6} {'ours/used':>9}" if args.rss else ""))
    worst = None
    for name in args.models.split(","):
        info = read_gguf_info(paths[name])
        for ctx in (int(c) for c in args.contexts.split(",")):
            for slots in (int(s) for s in args.slots.split(",")):
                rows = engine_projection(engine_dir, paths[name], ctx, slots)
                engine = rows.get("Host", [0, 0, 0])
                # The engine's flash attention is "auto": on, on a CPU.
                host = estimate(info, ctx=ctx, slots=slots, ubatch=512, flash_attn=True).devices[0]
                ours = [host.model_mib, host.context_mib, host.compute_mib]
                ratio = sum(ours) / max(sum(engine), 1)
                worst = ratio if worst is None else min(worst, ratio)
                line = (f"{name:<6} {ctx:>6} {slots:>5} | {'/'.join(map(str, engine)):>16} {sum(engine):>6} | "
                        f"{'/'.join(map(str, ours)):>16} {sum(ours):>6} {ratio:>8.3f}")
                if args.rss:
                    used = resident_mib(engine_dir, paths[name], ctx, slots)
                    line += f" | {used:>6} {sum(ours) / max(used, 1):>9.3f}"
                print(line, flush=True)
    print(f"lowest ours/engine: {worst:.3f} (the rule: never below 0.95)")
    return 0 if worst is not None and worst >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
