"""A constant load on the fleet's gateway: N clients, each sending one request after the other, alternating a short
completion and a streaming one, until a stop file appears (or a duration passes). Every request is recorded: when
it started and ended, its status, and whether a stream ended with [DONE].

With --metrics-url (the gateway's Prometheus exporter), each model's replicas in rotation are sampled every 150 ms
meanwhile (bench/gateway_rotation.py), and the record says the fewest seen per backend (``rotation``).

Used by bench/rollout_under_load.py and by the molecule scenario `gateway` (which starts it in the background, runs
a rollout, then stops it and reads the record). Standard library only.

    gateway_load.py --url http://10.213.47.6:8000 --key-file KEY --clients 4 --stop-file /tmp/stop --out load.json \
        --metrics-url http://10.213.47.6:8405/metrics
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import gateway_rotation

SHORT = {"prompt": "The capital of France is", "n_predict": 8, "temperature": 0}
STREAM = {"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0, "stream": True}


def one_request(url: str, key: str, model: str, stream: bool, timeout: float) -> dict:
    body = dict(STREAM if stream else SHORT)
    if model:
        body["model"] = model
    path = "/v1/completions" if stream else "/completion"
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    started = time.time()
    record = {"kind": "stream" if stream else "short", "start": started}
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            record["status"] = answer.status
            if stream:
                last = b""
                for line in answer:
                    if line.strip():
                        last = line.strip()
                record["complete"] = last == b"data: [DONE]"
            else:
                record["complete"] = "content" in json.loads(answer.read())
    except urllib.error.HTTPError as err:
        record.update(status=err.code, complete=False, error=err.read()[:200].decode("utf-8", "replace"))
    except (OSError, ValueError) as err:
        record.update(status=0, complete=False, error=repr(err)[:200])
    record["end"] = time.time()
    return record


def run(args) -> list[dict]:
    key = Path(args.key_file).read_text().strip() if args.key_file else ""
    records: list[dict] = []
    lock = threading.Lock()
    deadline = time.time() + args.duration if args.duration else None

    def client(index: int) -> None:
        stream = bool(index % 2)
        while not (args.stop_file and os.path.exists(args.stop_file)) and not (deadline and time.time() > deadline):
            record = one_request(args.url, key, args.model, stream, args.timeout)
            record["client"] = index
            with lock:
                records.append(record)
            if record.get("status") != 200:
                time.sleep(0.1)  # a failing gateway answers at once: record the failures, do not flood it
            stream = not stream

    threads = [threading.Thread(target=client, args=(index,)) for index in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return records


def failures(records: list[dict]) -> list[dict]:
    return [record for record in records if record.get("status") != 200 or not record.get("complete")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--url", required=True, help="the gateway's URL")
    parser.add_argument("--key-file", default="", help="a file holding the client key")
    parser.add_argument("--model", default="", help="the model to ask for (default: the gateway's default)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--stop-file", default="", help="stop once this file exists")
    parser.add_argument("--duration", type=float, default=0, help="or stop after this many seconds")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--out", required=True, help="where the JSON record goes")
    parser.add_argument("--metrics-url", default="",
                        help="the gateway's exporter (http://HOST:PORT/metrics): sample the replicas in rotation")
    args = parser.parse_args()
    sampler = None
    if args.metrics_url:
        key = Path(args.key_file).read_text().strip() if args.key_file else ""
        sampler = gateway_rotation.RotationSampler(args.metrics_url, key).start()
    records = run(args)
    rotation = sampler.stop() if sampler else None
    failed = failures(records)
    Path(args.out).write_text(json.dumps({"records": records, "sent": len(records), "failed": len(failed),
                                          "failures": failed[:20], "rotation": rotation}))
    print(f"sent {len(records)}, failed {len(failed)}")


if __name__ == "__main__":
    main()
