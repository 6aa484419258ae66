"""Fleet placement: how fast fleet_placement.place is, and how close to the best placement it gets.

Usage: .venv/bin/python bench/placement.py [--sizes 10,100,1000] [--deployments 300] [--runs 3] [--seed 1]
                                           [--ilp-limit-s 120] [--ilp-max-hosts 100]

Simulated fleets of N hosts with 8 cards each, mixed: cards of 24, 48 and 80 GiB (one class per host), each with
0-30 % already used, 128-1024 GiB of free RAM, labels for the card class and a zone. The same 300 deployments for
every size: 1, 2, 4 or 8 cards per replica (or RAM only), 1-4 replicas, mostly spread, some binpack, some needing a
card class. For each size it prints:

* the time place() takes (median of --runs, on this machine), and how it grows from one size to the next;
* the replicas it placed; those that would fit the fleet each on its own ("fit alone", an upper bound); and the
  most any placement holds, from an integer program (PuLP's CBC) where one can be solved within --ilp-limit-s
  (hosts up to --ilp-max-hosts): "optimal" when CBC proved it, "incumbent" for the best CBC found in its time;
* the memory left free, and the part of it stranded: free room on cards (or hosts' RAM) too small for the smallest
  need of any replica left unplaced.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

conftest.collection_path()
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import (  # noqa: E402
    DEFAULT_GPU_MARGIN_MIB,
    DEFAULT_RAM_MARGIN_MIB,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.fleet_placement import place  # noqa: E402

GIB = 1024
CARD_CLASSES = {"l40": 48 * GIB, "a100": 80 * GIB, "rtx": 24 * GIB}


def fleet(size: int, rng: random.Random) -> list[dict]:
    hosts = []
    for number in range(size):
        kind = rng.choice(sorted(CARD_CLASSES))
        total = CARD_CLASSES[kind]
        cards = [{"uuid": f"GPU-{number:04d}-{index}", "index": index, "total_mib": total,
                  "free_mib": int(total * (1 - rng.uniform(0, 0.3)))} for index in range(8)]
        hosts.append({"name": f"host{number:04d}", "ram_free_mib": rng.randint(128, 1024) * GIB, "gpus": cards,
                      "labels": {"card": kind, "zone": f"z{number % 4}"}})
    return hosts


def deployments(count: int, rng: random.Random) -> list[dict]:
    wanted = []
    for number in range(count):
        gpus = rng.choices([0, 1, 2, 4, 8], weights=[20, 40, 20, 12, 8])[0]
        if gpus:
            per_card = rng.randint(4, 70) * GIB
            memory = per_card * gpus
        else:
            memory = rng.randint(1, 64) * GIB
        entry = {"name": f"model{number:03d}", "replicas": rng.randint(1, 4), "memory_mib": memory, "gpus": gpus,
                 "policy": rng.choices(["spread", "binpack"], weights=[80, 20])[0]}
        if rng.random() < 0.3:
            entry["labels"] = {"card": rng.choice(sorted(CARD_CLASSES))}
        wanted.append(entry)
    return wanted


def optimum(wanted: list[dict], hosts: list[dict], limit_s: int) -> tuple[int | None, str]:
    """The most replicas any placement holds, by an integer program over counts of replicas per host and card."""
    try:
        import pulp  # noqa: PLC0415 - only this measurement needs it
    except ImportError:
        return None, "no pulp"
    problem = pulp.LpProblem("placement", pulp.LpMaximize)
    count, uses = {}, {}
    for d in wanted:
        need = -(-d["memory_mib"] // d["gpus"]) if d["gpus"] else d["memory_mib"]
        for h in hosts:
            if any(h["labels"].get(k) != v for k, v in (d.get("labels") or {}).items()):
                continue
            if d["gpus"]:
                fitting = [c for c in h["gpus"] if c["free_mib"] - DEFAULT_GPU_MARGIN_MIB >= need]
                if len(fitting) < d["gpus"]:
                    continue
            elif h["ram_free_mib"] - DEFAULT_RAM_MARGIN_MIB < need:
                continue
            top = 1 if d["policy"] == "spread" else d["replicas"]
            n = pulp.LpVariable(f"n_{d['name']}_{h['name']}", 0, top, cat="Integer")
            count[(d["name"], h["name"])] = n
            if d["gpus"]:
                parts = []
                for c in fitting:
                    w = pulp.LpVariable(f"w_{d['name']}_{c['uuid']}".replace("-", "_"), 0, top, cat="Integer")
                    uses.setdefault(c["uuid"], []).append((need, w))
                    problem += w <= n
                    parts.append(w)
                problem += pulp.lpSum(parts) == d["gpus"] * n
    for d in wanted:
        mine = [n for (name, _h), n in count.items() if name == d["name"]]
        if mine:
            problem += pulp.lpSum(mine) <= d["replicas"]
    for h in hosts:
        ram = [(d["memory_mib"] if not d["gpus"] else 0, count[(d["name"], h["name"])]) for d in wanted
               if (d["name"], h["name"]) in count and not d["gpus"]]
        if ram:
            problem += pulp.lpSum(mib * n for mib, n in ram) <= h["ram_free_mib"] - DEFAULT_RAM_MARGIN_MIB
        for c in h["gpus"]:
            if c["uuid"] in uses:
                problem += pulp.lpSum(mib * w for mib, w in uses[c["uuid"]]) <= c["free_mib"] - DEFAULT_GPU_MARGIN_MIB
    problem += pulp.lpSum(count.values())
    status = problem.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=limit_s))
    best = round(pulp.value(problem.objective) or 0)
    proved = pulp.LpStatus[status] == "Optimal" and problem.sol_status == pulp.LpSolutionOptimal
    return best, "optimal" if proved else "incumbent"


def fits_alone(d: dict, hosts: list[dict]) -> bool:
    """One replica of ``d`` fits some host it may use, on the fleet as it is (before any placement)."""
    need = -(-d["memory_mib"] // d["gpus"]) if d["gpus"] else d["memory_mib"]
    for h in hosts:
        if any(h["labels"].get(k) != v for k, v in (d.get("labels") or {}).items()):
            continue
        if d["gpus"] and sum(c["free_mib"] - DEFAULT_GPU_MARGIN_MIB >= need for c in h["gpus"]) >= d["gpus"]:
            return True
        if not d["gpus"] and h["ram_free_mib"] - DEFAULT_RAM_MARGIN_MIB >= need:
            return True
    return False


def stranded(result: dict, wanted: list[dict], hosts: list[dict]) -> tuple[int, int]:
    """(MiB left free on cards and RAM, MiB of it in pieces too small for every unplaced replica that would fit the
    fleet on its own: memory no waiting replica can use)."""
    by_name = {d["name"]: d for d in wanted}
    card_room = {c["uuid"]: c["free_mib"] - DEFAULT_GPU_MARGIN_MIB for h in hosts for c in h["gpus"]}
    ram_room = {h["name"]: h["ram_free_mib"] - DEFAULT_RAM_MARGIN_MIB for h in hosts}
    for p in result["placements"]:
        d = by_name[p["deployment"]]
        if d["gpus"]:
            for uuid in p["gpus"]:
                card_room[uuid] -= -(-d["memory_mib"] // d["gpus"])
        else:
            ram_room[p["host"]] -= d["memory_mib"]
    waiting = [by_name[u["deployment"]] for u in result["unplaced"] if fits_alone(by_name[u["deployment"]], hosts)]
    card_need = min((-(-d["memory_mib"] // d["gpus"]) for d in waiting if d["gpus"]), default=None)
    ram_need = min((d["memory_mib"] for d in waiting if not d["gpus"]), default=None)
    free = sum(max(r, 0) for r in card_room.values()) + sum(max(r, 0) for r in ram_room.values())
    lost = sum(max(r, 0) for r in card_room.values() if card_need is None or r < card_need)
    lost += sum(max(r, 0) for r in ram_room.values() if ram_need is None or r < ram_need)
    return free, lost if waiting else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--deployments", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ilp-limit-s", type=int, default=120)
    parser.add_argument("--ilp-max-hosts", type=int, default=100)
    args = parser.parse_args()
    wanted = deployments(args.deployments, random.Random(args.seed))
    total = sum(d["replicas"] for d in wanted)
    print(f"{args.deployments} deployments, {total} replicas; cards of "
          f"{', '.join(f'{k} {v // GIB} GiB' for k, v in sorted(CARD_CLASSES.items()))}, 8 per host")
    print(f"{'hosts':>6} {'place s':>8} {'growth':>7} {'placed':>7} {'fit alone':>9} {'best':>12} {'search':>15} "
          f"{'free GiB':>9} {'stranded GiB':>13}")
    previous = None
    for size in (int(s) for s in args.sizes.split(",")):
        hosts = fleet(size, random.Random(args.seed * 1000 + size))
        times = []
        for _run in range(args.runs):
            started = time.perf_counter()
            result = place(wanted, hosts)
            times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        growth = f"x{seconds / previous:.1f}" if previous else "-"
        previous = seconds
        if size <= args.ilp_max_hosts:
            best, how = optimum(wanted, hosts, args.ilp_limit_s)
            best_text = f"{best} {how}" if best is not None else how
        else:
            best_text = "not solved"
        search = next((n["text"] for n in result["notes"] if n["id"] == "placement.search"), "not needed")
        search = "finished" if "fewest" in search else "budget reached" if "budget" in search else search
        free, lost = stranded(result, wanted, hosts)
        alone = sum(d["replicas"] for d in wanted if fits_alone(d, hosts))
        print(f"{size:>6} {seconds:>8.3f} {growth:>7} {len(result['placements']):>7} {alone:>9} {best_text:>12} "
              f"{search:>15} {free / GIB:>9.0f} {lost / GIB:>13.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
