"""Hostile GGUF corpus: read_gguf_info must raise GGUFError on every case, fast and in bounded memory.

Usage: .venv/bin/python bench/gguf_hostile.py [--repeat N] [--max-seconds S] [--max-peak-mib M]

Cases (generators shared with tests/unit/plugins/module_utils/_probes/test_gguf_header.py, from
tests/unit/support/gguf_corpus.py):

* truncation at every section boundary of a hand-encoded model (v1, v2, v3,
  little and big endian), one byte either side;
* truncation at every byte of a small GGUFWriter model (hybrid, MTP tensor),
  up to and including its last tensor's data offset;
* the named hostile files: wrong magic and versions, counts and lengths larger
  than the file or huge (2^62), strings over 64 MiB announced, arrays nested
  5 and 200 deep, bad alignments, duplicate keys, oversized tensor names and
  dimensions, tensor offsets past the end;
* split models with a missing shard, a directory in place of a shard, and a
  truncated follower shard.

For each case: wall time of read_gguf_info (best of --repeat runs, no tracing),
then the tracemalloc peak of one traced run, and the process's ru_maxrss
before and after. Prints the count, the worst time and the worst peak with
their cases, and exits 1 if any case did not raise GGUFError or crossed a limit.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

conftest.collection_path()

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gguf_header import (  # noqa: E402
    GGUFError,
    clear_cache,
    read_gguf_info,
)
from tests.unit.support.gguf_corpus import (  # noqa: E402
    hostile_files,
    put,
    section_cuts,
    write_split,
    write_truncation_model,
)

MIB = 1 << 20


@dataclass
class Case:
    name: str
    path: str


@dataclass
class Result:
    name: str
    seconds: float
    peak_bytes: int
    maxrss_delta_kib: int
    error: str  # the GGUFError text, or what went wrong instead


def section_cases(directory: Path) -> Iterator[Case]:
    """Every section boundary of the hand-encoded model, in each version and byte order."""
    for version in (1, 2, 3):
        for order in ("<", ">"):
            data, cuts, _valid = section_cuts(version, order)
            label = f"v{version}{'le' if order == '<' else 'be'}"
            for cut in cuts:
                yield Case(f"section-{label}-cut-{cut}", put(directory, data[:cut], f"section-{label}-{cut}.gguf"))


def byte_cases(directory: Path) -> Iterator[Case]:
    """Every byte of a small written model, up to its last tensor's data."""
    data, end = write_truncation_model(directory / "written.gguf")
    for cut in range(end + 1):
        yield Case(f"every-byte-cut-{cut}/{len(data)}", put(directory, data[:cut], f"byte-{cut}.gguf"))


def hostile_cases(directory: Path) -> Iterator[Case]:
    for name, (data, _message) in hostile_files().items():
        yield Case(f"hostile-{name}", put(directory, data, f"hostile-{name}.gguf"))


def shard_cases(directory: Path) -> Iterator[Case]:
    """Split models that cannot be read: a shard missing, a directory in its place, a cut follower."""
    variants: list[tuple[str, Callable[[list[Path]], None], int]] = [
        ("missing-middle-shard", lambda files: files[1].unlink(), 0),
        ("missing-last-shard", lambda files: files[2].unlink(), 0),
        ("missing-first-shard-read-via-follower", lambda files: files[0].unlink(), 2),
        ("directory-in-place-of-a-shard", lambda files: (files[2].unlink(), files[2].mkdir()), 0),
        ("truncated-follower-shard", lambda files: files[2].write_bytes(files[2].read_bytes()[:40]), 0),
    ]
    for name, damage, read_index in variants:
        where = directory / f"split-{name}"
        where.mkdir()
        files = write_split(where, small_first_shard=False)
        damage(files)
        yield Case(f"shards-{name}", str(files[read_index]))


def measure(case: Case, repeat: int) -> Result:
    error = ""
    best = float("inf")
    for _run in range(repeat):
        clear_cache()
        start = time.perf_counter()
        try:
            read_gguf_info(case.path)
            error = "NO ERROR: read_gguf_info returned"
        except GGUFError as exc:
            error = str(exc)
        except Exception as exc:  # the point is to report anything but GGUFError
            error = f"WRONG EXCEPTION {type(exc).__name__}: {exc}"
        best = min(best, time.perf_counter() - start)
    clear_cache()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    with contextlib.suppress(Exception):  # already classified above: only the memory matters here
        read_gguf_info(case.path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss_delta = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    return Result(case.name, best, peak, rss_delta, error)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (best kept)")
    parser.add_argument("--max-seconds", type=float, default=0.5, help="fail above this time for one case")
    parser.add_argument("--max-peak-mib", type=float, default=4.0, help="fail above this traced peak for one case")
    args = parser.parse_args()

    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="gguf-hostile-") as tmp:
        directory = Path(tmp)
        groups = {
            "section boundaries": section_cases,
            "every byte": byte_cases,
            "named hostile files": hostile_cases,
            "split models": shard_cases,
        }
        counts = {}
        for label, make in groups.items():
            sub = directory / label.replace(" ", "-")
            sub.mkdir()
            before = len(results)
            results += [measure(case, args.repeat) for case in make(sub)]
            counts[label] = len(results) - before
    elapsed = time.perf_counter() - started
    rss_end = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    failures = [r for r in results if r.error.startswith(("NO ERROR", "WRONG EXCEPTION"))]
    slow = [r for r in results if r.seconds > args.max_seconds]
    big = [r for r in results if r.peak_bytes > args.max_peak_mib * MIB]
    worst_time = max(results, key=lambda r: r.seconds)
    worst_peak = max(results, key=lambda r: r.peak_bytes)
    worst_rss = max(results, key=lambda r: r.maxrss_delta_kib)
    total_read = sum(r.seconds for r in results)

    print(f"cases: {len(results)} ({', '.join(f'{label} {n}' for label, n in counts.items())})")
    print(f"raised GGUFError: {len(results) - len(failures)}/{len(results)}")
    print(f"worst time: {worst_time.seconds * 1000:.3f} ms  [{worst_time.name}]")
    print(f"    error: {worst_time.error[:160]}")
    print(f"worst tracemalloc peak: {worst_peak.peak_bytes / 1024:.1f} KiB  [{worst_peak.name}]")
    print(f"    error: {worst_peak.error[:160]}")
    print(f"largest ru_maxrss rise during one case: {worst_rss.maxrss_delta_kib} KiB  [{worst_rss.name}]")
    print(f"ru_maxrss: {rss_start} KiB at start, {rss_end} KiB at end (+{rss_end - rss_start} KiB, writing included)")
    print(f"time in read_gguf_info (best runs summed): {total_read:.3f} s; whole run {elapsed:.1f} s")
    for r in failures:
        print(f"FAIL {r.name}: {r.error}")
    for r in slow:
        print(f"SLOW {r.name}: {r.seconds:.3f} s > {args.max_seconds} s")
    for r in big:
        print(f"BIG  {r.name}: peak {r.peak_bytes / MIB:.1f} MiB > {args.max_peak_mib} MiB")
    return 1 if failures or slow or big else 0


if __name__ == "__main__":
    sys.exit(main())
