"""A preset rollout under load, through the fleet's gateway, on the local fleet (scripts/fleet.sh).

    bench/rollout_under_load.py [--hosts 2] [--clients 4] [--steady-s 20]

Brings up N nspawn hosts (the gateway on the first one), deploys the embedded default (Gemma-3-270M, CTX 4096) with
playbooks/deploy-llm.yml, then measures, in one run:

- steady state: a constant load of clients on the gateway (short and streaming completions, bench/gateway_load.py)
  for --steady-s seconds: requests, failures, p50 and p99 latency;
- the rollout of CTX 4096 -> 2048 (canary first, then the rest in batches that keep a replica in rotation) under the
  same load: requests, failures (must be 0), p50 and p99 latency, and the rollout's duration; meanwhile a long
  streaming completion started on the canary's engine just before its restart must finish complete;
- the gateway's overhead: the same short completion through the gateway and straight to an engine, alternated,
  and the ratio of their medians;
- bad requests through the gateway: each one's status, and whether any engine saw it (HAProxy's server counters).

Needs root (systemd-nspawn), like `make deploy-local`; the hosts stay up (`make fleet-down`). Prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import gateway_load  # noqa: E402

CACHE = Path(os.environ.get("LLAMAFLEET_CACHE", Path.home() / ".cache" / "llamafleet"))
SHARE = Path(os.environ.get("LLAMAFLEET_FLEET_SHARE", CACHE / "fleet-share"))
KEY_FILE = Path(os.environ.get("LLAMAFLEET_DEMO_KEY_FILE", CACHE / "fleet" / "demo-api-key"))
VENV = Path(os.environ.get("VENV", ROOT / ".venv"))
MODEL = "gemma-3-270m"


def sh(*argv, env=None, capture=True) -> str:
    done = subprocess.run([str(part) for part in argv], capture_output=capture, text=True, check=False,
                          env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed ({done.returncode}):\n"
                         f"{(done.stdout or '')[-3000:]}{(done.stderr or '')[-3000:]}")
    return done.stdout or ""


def fleet_hosts() -> list[dict]:
    return json.loads(sh(ROOT / "scripts" / "fleet.sh", "hosts"))["hosts"]


def deploy(ctx: int, gateway_inventory: Path) -> float:
    """playbooks/deploy-llm.yml with the embedded default at this context; its duration in seconds."""
    extra = {"llama_server_presets": {"gemma": {"model": "{{ llama_fleet_artifacts.model }}", "ctx": ctx,
                                                "threads": 1, "extra_args": f"--alias {MODEL}"}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(extra, handle)
    started = time.monotonic()
    sh(VENV / "bin" / "ansible-playbook", "-i", sh(ROOT / "scripts" / "fleet.sh", "inventory").strip(),
       "-i", gateway_inventory, ROOT / "playbooks" / "deploy-llm.yml",
       "-e", f"@{ROOT / 'playbooks' / 'vars' / 'local-fleet.yml'}", "-e", f"@{handle.name}",
       "-e", f"llama_fleet_summary_path={CACHE / 'fleet' / 'bench-summary.md'}",
       env={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"),
            "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "LLAMAFLEET_FLEET_SHARE": str(SHARE),
            "LLAMAFLEET_DEMO_KEY_FILE": str(KEY_FILE), "PATH": f"{VENV / 'bin'}:{os.environ['PATH']}"})
    return time.monotonic() - started


def latencies(records: list[dict], kind: str) -> tuple[float, float]:
    values = sorted(record["end"] - record["start"] for record in records if record.get("kind") == kind
                    and record.get("status") == 200)
    if not values:
        return 0.0, 0.0
    return statistics.median(values), values[min(len(values) - 1, int(len(values) * 0.99))]


class Load:
    """bench/gateway_load.py's clients in this process, until stopped."""

    def __init__(self, url: str, clients: int):
        self.stop_file = Path(tempfile.mkdtemp()) / "stop"
        self.args = argparse.Namespace(url=url, key_file=str(KEY_FILE), model=MODEL, clients=clients,
                                       stop_file=str(self.stop_file), duration=0, timeout=600, out="")
        self.records: list[dict] = []
        self.thread = threading.Thread(target=lambda: self.records.extend(gateway_load.run(self.args)))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_file.touch()
        self.thread.join()


def row(name: str, records: list[dict], extra: str = "") -> str:
    failed = gateway_load.failures(records)
    short, short99 = latencies(records, "short")
    stream, stream99 = latencies(records, "stream")
    return (f"| {name} | {len(records)} | {len(failed)} | {short:.2f} / {short99:.2f} | {stream:.2f} / {stream99:.2f}"
            f" | {extra} |")


def post(url: str, body: bytes, headers: dict, timeout: float = 120) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def long_stream(url: str, key: str, out: dict) -> None:
    body = json.dumps({"model": MODEL, "prompt": "Write a long story about a lighthouse keeper.", "max_tokens": 1500,
                       "stream": True, "ignore_eos": True}).encode()
    request = urllib.request.Request(url + "/v1/completions", data=body, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    events, last = 0, b""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            for line in answer:
                if line.startswith(b"data: "):
                    events += 1
                    last = line.strip()
    except OSError as err:
        out["error"] = repr(err)
    out.update(events=events, complete=last == b"data: [DONE]", seconds=time.monotonic() - started)


def overhead(gateway: str, direct: str, key: str, rounds: int = 30) -> tuple[float, float]:
    body = json.dumps({"model": MODEL, "prompt": "The capital of France is", "n_predict": 4, "temperature": 0,
                       "cache_prompt": False}).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    through, straight = [], []
    for _round in range(rounds):
        for url, into in ((gateway, through), (direct, straight)):
            started = time.monotonic()
            status, _answer = post(url + "/completion", body, headers)
            if status == 200:
                into.append(time.monotonic() - started)
    return statistics.median(through), statistics.median(straight)


def served_requests(gateway_host: dict) -> int:
    """Requests HAProxy sent to any engine so far (stot of every server), read on the gateway host."""
    script = ("import csv,socket;s=socket.socket(socket.AF_UNIX);s.connect('/run/haproxy/admin.sock');"
              "s.sendall(b'show stat\\n');t=b''\nwhile (d:=s.recv(65536)): t+=d\n"
              "l=t.decode().splitlines();r=csv.DictReader([l[0][2:],*l[1:]]);"
              "print(sum(int(x['stot'] or 0) for x in r if x['svname'] not in ('FRONTEND','BACKEND')))")
    key = json.loads(sh(ROOT / "scripts" / "fleet.sh", "hosts"))["ssh_key"]
    return int(sh("ssh", "-i", key, "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                  "-o", "LogLevel=ERROR", f"root@{gateway_host['address']}", "python3 -c " + shlex.quote(script))
               .strip())


def bad_requests(url: str, key: str, gateway_host: dict) -> list[str]:
    chat = url + "/v1/chat/completions"
    good = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    cases = [
        ("unknown model", chat, json.dumps({"model": "gpt-9", "messages": []}).encode(), good),
        ("no key", chat, json.dumps({"model": MODEL, "messages": []}).encode(), {"Content-Type": "application/json"}),
        ("wrong key", chat, json.dumps({"model": MODEL, "messages": []}).encode(),
         {**good, "Authorization": "Bearer wrong-key-0000"}),
        ("body over the limit (2 MiB)", chat, json.dumps({"model": MODEL, "prompt": "x" * (2 << 20)}).encode(), good),
        ("malformed JSON", chat, b'{"model": "' + MODEL.encode() + b'", "messages": [', good),
    ]
    lines = []
    for name, target, body, headers in cases:
        before = served_requests(gateway_host)
        status, answer = post(target, body, headers)
        seen = served_requests(gateway_host) - before
        kind = json.loads(answer or b"{}").get("error", {}).get("type", "")
        lines.append(f"| {name} | {status} | {kind} | {seen} |")
    # A slow sender: headers, then part of the body, then silence past the gateway's request timeout.
    import socket  # noqa: PLC0415 (only this case needs a raw socket)
    host, port = url.removeprefix("http://").split(":")
    before = served_requests(gateway_host)
    with socket.create_connection((host, int(port)), timeout=120) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + key.encode()
                     + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":")
        answer = sock.recv(65536)
    status = int(answer.split(b" ")[1])
    kind = json.loads(answer.partition(b"\r\n\r\n")[2] or b"{}").get("error", {}).get("type", "")
    lines.append(f"| slow sender (stops mid-body) | {status} | {kind} | {served_requests(gateway_host) - before} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--steady-s", type=float, default=20)
    args = parser.parse_args()

    env = {"LLAMAFLEET_FLEET_SHARE": str(SHARE)}
    sh(ROOT / "scripts" / "fleet_artifacts.sh", SHARE, env=env)
    sh(ROOT / "scripts" / "fleet.sh", "up", args.hosts, env=env)
    if not KEY_FILE.exists():
        KEY_FILE.parent.mkdir(parents=True, exist_ok=True)
        KEY_FILE.write_text("llf-" + os.urandom(18).hex())
        KEY_FILE.chmod(0o600)
    key = KEY_FILE.read_text().strip()
    hosts = fleet_hosts()
    gateway_inventory = CACHE / "fleet" / "gateway.ini"
    gateway_inventory.write_text(f"[llama_fleet_gateway]\n{hosts[0]['name']}\n")
    deploy(4096, gateway_inventory)
    url = f"http://{hosts[0]['address']}:8000"
    direct = f"http://{hosts[-1]['address']}:8080"

    with Load(url, args.clients) as steady:
        time.sleep(args.steady_s)
    stream: dict = {}
    with Load(url, args.clients) as during:
        streamer = threading.Thread(target=long_stream, args=(url, key, stream))
        streamer.start()
        time.sleep(1)
        seconds = deploy(2048, gateway_inventory)
    streamer.join()
    through, straight = overhead(url, direct, key)

    print(f"\n{args.hosts} hosts, {args.clients} clients; latency p50 / p99 in seconds (short: 8 tokens; "
          "stream: 48 tokens)\n")
    print("| phase | requests | failed | short p50 / p99 | stream p50 / p99 | |")
    print("|---|---|---|---|---|---|")
    print(row(f"steady ({args.steady_s:.0f} s)", steady.records))
    print(row("rollout CTX 4096 -> 2048", during.records, f"rollout {seconds:.1f} s"))
    print(f"\nlong stream across the rollout: {stream.get('events', 0)} events, "
          f"{'complete' if stream.get('complete') else 'NOT complete'} in {stream.get('seconds', 0):.1f} s"
          f"{' ' + stream['error'] if stream.get('error') else ''}")
    print(f"gateway overhead: median {through * 1000:.1f} ms through the gateway, {straight * 1000:.1f} ms direct: "
          f"ratio {through / straight:.3f}")
    print("\n| bad request | status | error type | requests engines saw |\n|---|---|---|---|", flush=True)
    print("\n".join(bad_requests(url, key, hosts[0])), flush=True)
    deploy(4096, gateway_inventory)  # back to the default, for the next run


if __name__ == "__main__":
    main()
