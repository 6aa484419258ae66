"""How many replicas of each model the fleet's gateway has in rotation, sampled from its Prometheus exporter
(HAProxy's ``haproxy_server_status{state="UP"}``) every 100 ms while something runs, and the fewest seen.

The samples are taken by a process of their own (this file, ``--follow``), at a higher priority where it may: in
the bench's process, the load's client threads held the sampler back (a gap of 312 ms between two samples on 16
hosts).

Used by bench/gateway_load.py (``--metrics-url``), and so by bench/rollout_under_load.py and the molecule scenario
`gateway`. Standard library only.

    gateway_rotation.py --url http://10.213.47.6:8405/metrics --key-file KEY --seconds 10
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

INTERVAL_S = 0.1
# haproxy_server_status{proxy="model_tiny",server="llf-host1:main",state="UP"} 1
_STATUS = re.compile(r'^haproxy_server_status\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)\s*$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def in_rotation(text: str) -> dict[str, int]:
    """Each backend's servers in rotation (state UP), from the exporter's text: every backend with a server is
    listed, with 0 when none is up."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        found = _STATUS.match(line)
        if not found:
            continue
        labels = dict(_LABEL.findall(found.group("labels")))
        proxy = labels.get("proxy", "")
        counts.setdefault(proxy, 0)
        if labels.get("state") == "UP" and float(found.group("value")) == 1:
            counts[proxy] += 1
    return counts


def fetch(url: str, key: str, timeout: float = 2.0) -> str:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as answer:
        return answer.read().decode("utf-8", "replace")


class RotationSampler:
    """Samples the exporter in a child process until stopped; ``summary()`` gives, per backend, the fewest and the
    most servers in rotation, and the sampling's own figures (samples, failed fetches, longest gap between
    samples)."""

    def __init__(self, url: str, key: str = "", interval_s: float = INTERVAL_S):
        self.url, self.key, self.interval_s = url, key, interval_s
        self.samples: list[tuple[float, dict[str, int]]] = []
        self.errors = 0
        self._child: subprocess.Popen | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        assert self._child is not None
        assert self._child.stdout is not None
        for line in self._child.stdout:
            found = json.loads(line)
            if found.get("error"):
                self.errors += 1
            else:
                self.samples.append((found["at"], found["counts"]))

    def start(self) -> RotationSampler:
        # The key goes on the child's stdin, never its argv; the child samples until its stdin closes.
        self._child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--follow", "--url", self.url,
                                        "--interval-s", str(self.interval_s)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._child.stdin is not None
        self._child.stdin.write(self.key + "\n")
        self._child.stdin.flush()
        self._reader.start()
        return self

    def stop(self) -> dict:
        if self._child is not None and self._child.stdin is not None:
            self._child.stdin.close()
            try:
                self._child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._child.kill()
            self._reader.join(timeout=10)
        return self.summary()

    def summary(self, since: float = 0.0, until: float = float("inf")) -> dict:
        """Per backend: ``min``, ``max``, ``min_at`` (the first time the fewest were seen); and the sampling's
        ``samples``, ``errors`` and ``longest_gap_s``."""
        kept = [(at, counts) for at, counts in self.samples if since <= at <= until]
        backends: dict[str, dict] = {}
        for at, counts in kept:
            for proxy, count in counts.items():
                entry = backends.setdefault(proxy, {"min": count, "max": count, "min_at": at})
                if count < entry["min"]:
                    entry.update(min=count, min_at=at)
                entry["max"] = max(entry["max"], count)
        times = [at for at, _counts in kept]
        gap = max((later - earlier for earlier, later in itertools.pairwise(times)), default=0.0)
        return {"backends": backends, "samples": len(kept), "errors": self.errors,
                "longest_gap_s": round(gap, 3)}


def follow(url: str, interval_s: float) -> None:
    """The child: one JSON line per sample (``at``, ``counts``) or failed fetch (``error``), until stdin closes."""
    key = sys.stdin.readline().strip()
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    with contextlib.suppress(OSError):
        os.nice(-5)  # an instrument: it keeps its cadence on a busy machine where it may (root)
    while not stop.is_set():
        started = time.time()
        try:
            line = {"at": started, "counts": in_rotation(fetch(url, key))}
        except (OSError, ValueError) as err:
            line = {"error": str(err)}
        print(json.dumps(line), flush=True)
        stop.wait(max(interval_s - (time.time() - started), 0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--url", required=True, help="the gateway's exporter, http://HOST:PORT/metrics")
    parser.add_argument("--key-file", default="", help="a file holding a client key")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--follow", action="store_true",
                        help="sample until stdin closes (its first line: the key), one JSON line per sample")
    parser.add_argument("--interval-s", type=float, default=INTERVAL_S)
    args = parser.parse_args()
    if args.follow:
        follow(args.url, args.interval_s)
        return
    key = Path(args.key_file).read_text().strip() if args.key_file else ""
    sampler = RotationSampler(args.url, key, args.interval_s).start()
    try:
        time.sleep(args.seconds)
    finally:
        print(json.dumps(sampler.stop(), indent=1, sort_keys=True))


if __name__ == "__main__":
    try:
        main()
    except urllib.error.URLError as err:
        raise SystemExit(f"the exporter did not answer: {err}") from None
