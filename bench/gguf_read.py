"""Time our GGUF header walk against gguf.GGUFReader on the same file, in one run.

Usage: .venv/bin/python bench/gguf_read.py [MODEL.gguf] [--runs N] [--reader-runs M]

Default model: the Gemma-3-270M file scripts/fetch_model.sh puts in the cache.
read_gguf_info is timed cold (its cache cleared before every run; the OS page
cache stays warm, as it would on a host that just loaded the model) and the
best of N is kept; GGUFReader is slow on large vocabularies, so it runs once by
default. Prints both times and the ratio; exits 1 if the two disagree on the
fields both can see.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

conftest.collection_path()

from gguf import GGUFReader  # noqa: E402 - the bench compares with it; imported before any timing

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import gguf_meta  # noqa: E402

CACHE = os.environ.get("LLAMAFLEET_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "llamafleet"))
DEFAULT_MODEL = os.path.join(CACHE, "models", "gemma-3-270m-q4_k_m.gguf")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL)
    parser.add_argument("--runs", type=int, default=10, help="runs of read_gguf_info (best kept)")
    parser.add_argument("--reader-runs", type=int, default=1, help="runs of gguf.GGUFReader (best kept)")
    args = parser.parse_args()
    if not os.path.isfile(args.model):
        print(f"model not found: {args.model} (run scripts/fetch_model.sh)", file=sys.stderr)
        return 2

    ours = []
    for _run in range(args.runs):
        gguf_meta.clear_cache()
        start = time.perf_counter()
        info = gguf_meta.read_gguf_info(args.model)
        ours.append(time.perf_counter() - start)
    start = time.perf_counter()
    gguf_meta.read_gguf_info(args.model)
    cached = time.perf_counter() - start

    theirs = []
    for _run in range(args.reader_runs):
        start = time.perf_counter()
        reader = GGUFReader(args.model)
        theirs.append(time.perf_counter() - start)

    arch = reader.fields["general.architecture"].contents()
    seen_by_reader = {
        "arch": arch,
        "block_count": reader.fields[f"{arch}.block_count"].contents(),
        "context_length": reader.fields[f"{arch}.context_length"].contents(),
        "tensor_count": len(reader.tensors),
    }
    seen_by_us = {key: getattr(info, key) for key in seen_by_reader}

    size_mb = os.path.getsize(args.model) / 1e6
    best_ours, best_theirs = min(ours), min(theirs)
    print(f"model          {args.model} ({size_mb:.0f} MB)")
    median_ours = sorted(ours)[len(ours) // 2]
    print(f"read_gguf_info {best_ours * 1e3:9.1f} ms  best of {args.runs} cold (median {median_ours * 1e3:.1f} ms)")
    print(f"  cached       {cached * 1e6:9.1f} µs")
    print(f"GGUFReader     {best_theirs * 1e3:9.1f} ms  best of {args.reader_runs}")
    print(f"ratio          {best_theirs / best_ours:9.0f}x faster")
    print(f"fields         ours {seen_by_us}")
    print(f"               GGUFReader {seen_by_reader}")
    if seen_by_us != seen_by_reader:
        print("MISMATCH between read_gguf_info and GGUFReader", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
