"""Generated presets against the real engine's own parser: how many the planner accepts, and whether the
engine agrees with every one (tests/integration/test_fuzz_engine.py under the long hypothesis profile).

Usage: .venv/bin/python bench/fuzz_engine.py ENGINE_DIR MODEL [--examples N] [--seed S]

Prints: presets generated, refused by the planner (each naming its key or word), accepted and checked by
the engine (its preflight), accepted plans the engine rejected (must be 0), the accepted plans naming RPC
servers that this build refuses in its own words (RPC support is the engine's to tell), and the time per
preset. Exits 1 when the property fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("engine_dir")
    parser.add_argument("model")
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    with tempfile.TemporaryDirectory() as scratch:
        stats_file = os.path.join(scratch, "stats.json")
        env = {
            **os.environ,
            "LLAMAFLEET_ENGINE_DIR": args.engine_dir,
            "LLAMAFLEET_OLD_ENGINE_DIR": args.engine_dir,  # unused here; the conftest asks for both
            "LLAMAFLEET_MODEL": args.model,
            "LLAMAFLEET_FUZZ_PROFILE": "long",
            "LLAMAFLEET_FUZZ_EXAMPLES": str(args.examples),
            "LLAMAFLEET_FUZZ_STATS": stats_file,
        }
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--hypothesis-seed={seed}",
                   "tests/integration/test_fuzz_engine.py"]
        print(f"{args.examples} generated presets against {args.engine_dir}/llama-server, seed {seed}", flush=True)
        started = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        if not os.path.exists(stats_file):
            print(proc.stdout[-4000:], proc.stderr[-2000:])
            return 1
        with open(stats_file, encoding="utf-8") as handle:
            data = json.load(handle)
    counts = data["counts"]
    rows = [
        ("presets generated", counts.get("generated", 0)),
        ("refused by the planner, naming a key or word", counts.get("refused", 0)),
        ("external (nothing to run)", counts.get("external", 0)),
        ("accepted, checked by the engine's parser", counts.get("accepted", 0)),
        ("  of which naming RPC servers, refused by this build in its own words", counts.get("accepted_naming_rpc", 0)),
        ("accepted plans the engine rejected otherwise (must be 0)", counts.get("engine_rejected", 0)),
    ]
    for label, value in rows:
        print(f"{label:<72} {value:>7}")
    print(f"{'seconds (planning and one engine start per accepted plan)':<72} {seconds:>7.1f}")
    if counts.get("generated"):
        print(f"{'ms per generated preset':<72} {1000 * seconds / counts['generated']:>7.1f}")
    for rejected in data.get("rejected", []):
        print("REJECTED:", json.dumps(rejected)[:600])
    if proc.returncode != 0:
        print(proc.stdout[-4000:])
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
