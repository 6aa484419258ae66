"""The placement ledger at fleet scale: what the controller pays to read, scope, update and write it per run.

Usage: .venv/bin/python bench/fleet_ledger.py [--sizes 100,300,1000] [--replicas 8] [--runs 5]

Each deploy run with llama_fleet_deployments reads the ledger file, works out the run's scope (which hosts it read,
which it keeps frozen as the ledger has them, which are lost), writes back the entries of the hosts it read, and
saves the file. This runs those pure steps for simulated fleets of N hosts with --replicas placed replicas each, as
a run limited to half the fleet with one host in ten unreachable and one in twenty cordoned, and prints per size:
the median time of each step over --runs, the total, the time per host, the file's size, and how the total grows
from one size to the next (a ratio close to the ratio of sizes means linear).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

conftest.collection_path()
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import (  # noqa: E402
    Ledger,
    LedgerHost,
    ledger_text,
    read_ledger,
    updated,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (  # noqa: E402
    HostCapacity,
    HostReading,
    PlacedReplica,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.run_scope import run_scope  # noqa: E402


def replicas(host: int, count: int) -> tuple[PlacedReplica, ...]:
    names = [f"model{(host + index) % 50:02d}" for index in range(count)]
    return tuple(PlacedReplica(instance=f"{names[index]}-{index}", deployment=names[index], replica=index,
                               port=8080 + index, cuda_visible_devices=str(index), memory_mib=20480,
                               version="b6000", current=True) for index in range(count))


def fleet_text(size: int, count: int) -> tuple[list[str], str]:
    hosts = [f"host{number:04d}" for number in range(size)]
    ledger = Ledger(fleet="bench", hosts={name: LedgerHost(placed=replicas(number, count), cordoned=False)
                                          for number, name in enumerate(hosts)})
    return hosts, ledger_text(ledger)


def one_run(hosts: list[str], text: str, count: int) -> dict[str, float]:
    times = {}
    start = time.perf_counter()
    ledger = read_ledger(text, "bench", hosts)
    times["read"] = time.perf_counter() - start
    in_run = hosts[: len(hosts) // 2]
    statuses = {name: (None if number % 10 == 3 else "ok") for number, name in enumerate(in_run)}
    readings = {name: HostReading(capacity=HostCapacity(ram_total_mib=524288, ram_free_mib=262144),
                                  placed=replicas(number, count))
                for number, name in enumerate(in_run) if statuses[name] is not None}
    cordons = {name: (number % 20 == 7) or None for number, name in enumerate(hosts)}
    start = time.perf_counter()
    scope = run_scope(hosts, in_run, readings, statuses=statuses, cordons=cordons, ledger=ledger)
    times["scope"] = time.perf_counter() - start
    start = time.perf_counter()
    after = updated(ledger, hosts, {name: readings[name].placed for name in scope.read},
                    dict.fromkeys(scope.cordoned, True))
    times["update"] = time.perf_counter() - start
    start = time.perf_counter()
    ledger_text(after)
    times["write"] = time.perf_counter() - start
    times["total"] = sum(times.values())
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,300,1000")
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"ledger steps per run, median of {args.runs} runs, {args.replicas} replicas per host")
    print(f"{'hosts':>6} {'read ms':>8} {'scope ms':>9} {'update ms':>10} {'write ms':>9} {'total ms':>9} "
          f"{'µs/host':>8} {'file KiB':>9} {'growth':>14}")
    previous = None
    for size in sizes:
        hosts, text = fleet_text(size, args.replicas)
        runs = [one_run(hosts, text, args.replicas) for _run in range(args.runs)]
        median = {step: statistics.median(run[step] for run in runs) for step in runs[0]}
        growth = ""
        if previous:
            growth = f"x{median['total'] / previous[1]:.1f} for x{size / previous[0]:.1f}"
        print(f"{size:>6} {median['read'] * 1e3:>8.1f} {median['scope'] * 1e3:>9.1f} {median['update'] * 1e3:>10.1f} "
              f"{median['write'] * 1e3:>9.1f} {median['total'] * 1e3:>9.1f} {median['total'] / size * 1e6:>8.0f} "
              f"{len(text.encode()) / 1024:>9.0f} {growth:>14}")
        previous = (size, median["total"])


if __name__ == "__main__":
    main()
