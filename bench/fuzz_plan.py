"""Run the planner's property tests (tests/unit/plugins/module_utils/test_plan_properties.py) with many examples each.

Usage: .venv/bin/python bench/fuzz_plan.py [--examples N] [--seed S] [--jobs J] [-k SUBSTRING]

Same properties, strategies and assertions as the unit tests, under the
``long`` hypothesis profile (LLAMAFLEET_FUZZ_PROFILE=long: 10,000 examples per
property by default, a random seed printed for replay, no example database).
Each property runs in its own worker process. Prints, per property, the
examples run (calls of the test body; ``valid`` leaves out those discarded by
assume(), e.g. the documented PlanError cases), failures and seconds; exits 1
on any failure.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

conftest.collection_path()


@dataclass
class Outcome:
    name: str
    examples: int
    valid: int
    seconds: float
    failure: str


def load_properties(examples: int):
    """Import the test module under the long profile; its @given tests by name."""
    os.environ["LLAMAFLEET_FUZZ_PROFILE"] = "long"
    os.environ["LLAMAFLEET_FUZZ_EXAMPLES"] = str(examples)
    from tests.unit.plugins.module_utils import test_plan_properties as module  # noqa: PLC0415 - after the profile is chosen

    return {name: fn for name, fn in vars(module).items() if name.startswith("test_") and hasattr(fn, "hypothesis")}


def run_property(name: str, examples: int, seed: int) -> Outcome:
    from hypothesis import seed as use_seed  # noqa: PLC0415
    from hypothesis.errors import UnsatisfiedAssumption  # noqa: PLC0415

    test = load_properties(examples)[name]
    counts = {"examples": 0, "valid": 0}
    inner = test.hypothesis.inner_test

    def counting(*args, **kwargs):
        counts["examples"] += 1
        try:
            result = inner(*args, **kwargs)
        except UnsatisfiedAssumption:
            raise
        except BaseException:
            counts["valid"] += 1
            raise
        counts["valid"] += 1
        return result

    test.hypothesis.inner_test = counting
    started = time.perf_counter()
    failure = ""
    try:
        use_seed(seed)(test)()
    except BaseException:  # a failing property, whatever hypothesis raises (ExceptionGroup, Flaky, ...)
        failure = traceback.format_exc(limit=6)
    return Outcome(name, counts["examples"], counts["valid"], time.perf_counter() - started, failure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--examples", type=int, default=10_000, help="examples per property (default 10000)")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random, printed)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("-k", dest="select", default="", help="only properties whose name contains this")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)

    names = [n for n in load_properties(args.examples) if args.select in n]
    print(f"{len(names)} properties, {args.examples} examples each, seed {seed}, {args.jobs} jobs", flush=True)
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_property, name, args.examples, seed) for name in names]
        outcomes = [f.result() for f in futures]
    wall = time.perf_counter() - started

    width = max(len(n) for n in names)
    print(f"{'property':<{width}}  {'examples':>8}  {'valid':>8}  {'failures':>8}  {'seconds':>8}")
    for o in outcomes:
        print(f"{o.name:<{width}}  {o.examples:>8}  {o.valid:>8}  {int(bool(o.failure)):>8}  {o.seconds:>8.1f}")
    failed = [o for o in outcomes if o.failure]
    print(
        f"{'total':<{width}}  {sum(o.examples for o in outcomes):>8}  {sum(o.valid for o in outcomes):>8}  "
        f"{len(failed):>8}  {sum(o.seconds for o in outcomes):>8.1f}  (wall {wall:.1f} s)"
    )
    for o in failed:
        print(f"\nFAILED {o.name} (replay: --seed {seed} -k {o.name})\n{o.failure}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
