"""A preset rollout under load, through the fleet's gateway, on the local fleet (scripts/fleet.sh).

    bench/rollout_under_load.py [--hosts 2] [--fleet default|tiny] [--surge 0[,100%]] [--clients 4] [--steady-s 60]
                                [--rounds 1]

Brings up N nspawn hosts (the gateway on the first one) and deploys with playbooks/deploy-llm.yml either

- ``default``: the embedded default of `make deploy-local` (playbooks/vars/local-fleet.yml: Gemma-3-270M as "main"
  on every host and one placed replica, "tiny" twice), CTX 4096 for gemma, 2048 for tiny; the load asks for
  gemma-3-270m;
- ``tiny``: deployments only, of the tiny model: "chat" with N - N/4 replicas and "code" with N/4 (at least 1 and
  2), spread one per host; the load asks for "chat";

then measures, in one run:

- steady state: a constant load of clients on the gateway (short and streaming completions, bench/gateway_load.py)
  and a long streaming completion, as during the rollout, for --steady-s seconds: requests, failures, p50 and p99
  latency;
- a rollout of every preset's context halved, under the same load, with llama_fleet_max_surge = --surge (0: each
  replica drained first, within llama_fleet_max_unavailable, 25 % by default): requests, failures (the goal: 0), p50
  and p99 latency against the steady state's (the goal: at most 2x), the rollout's duration; meanwhile a long
  streaming completion started just before the rollout must finish complete;
- each model's replicas in rotation during the rollout, sampled from the gateway's exporter every 150 ms
  (bench/gateway_rotation.py): the fewest seen, against N (the most in steady state) and the goal: N - the bound of
  llama_fleet_max_unavailable, or N with surge where a host has room (hand-placed instances never surge);
- the gateway's overhead: the same short completion through the gateway and straight to an engine, alternated,
  and the ratio of their medians;
- bad requests through the gateway: each one's status, and whether any engine saw it (HAProxy's server counters).

Needs root (systemd-nspawn), like `make deploy-local`; the hosts stay up (`make fleet-down`). Prints tables. With
two --surge values (``0,100%``) the rollout back to the first presets is measured too, with the second; with one,
the fleet is deployed back unmeasured, with the same.

A p99 needs samples: a 2-host rollout serves about 100 short requests, whose p99 is then the second-worst. Each of
--rounds K rounds measures a steady state and the rollout(s) again; with K > 1 a last table pools each surge
setting's requests (steady and rollout) over the rounds, and gives the p99 ratio of the pooled samples and the
median of the rounds' ratios. Every p99 is interpolated between ranks (statistics.quantiles, inclusive) and printed
with its number of samples.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
import gateway_load  # noqa: E402
import gateway_rotation  # noqa: E402

import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable

conftest.collection_path()
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.rollout_bounds import (  # noqa: E402
    read_bounds,
)

CACHE = Path(os.environ.get("LLAMAFLEET_CACHE", Path.home() / ".cache" / "llamafleet"))
SHARE = Path(os.environ.get("LLAMAFLEET_FLEET_SHARE", CACHE / "fleet-share"))
STATE = Path(os.environ.get("LLAMAFLEET_FLEET_STATE", CACHE / "fleet"))  # scripts/fleet.sh's, shared with it
KEY_FILE = Path(os.environ.get("LLAMAFLEET_DEMO_KEY_FILE", STATE / "demo-api-key"))
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


def start_fleet(size: int) -> tuple[str, list[dict], Path]:
    """The fleet's artifacts and ``size`` hosts up, the demo key (made once), the gateway on the first host: (the
    key, the hosts, the gateway's inventory file)."""
    env = {"LLAMAFLEET_FLEET_SHARE": str(SHARE)}
    sh(ROOT / "scripts" / "fleet_artifacts.sh", SHARE, env=env)
    sh(ROOT / "scripts" / "fleet.sh", "up", size, env=env)
    if not KEY_FILE.exists():
        KEY_FILE.parent.mkdir(parents=True, exist_ok=True)
        KEY_FILE.write_text("llf-" + os.urandom(18).hex())
        KEY_FILE.chmod(0o600)
    hosts = fleet_hosts()
    gateway_inventory = STATE / "gateway.ini"
    gateway_inventory.write_text(f"[llama_fleet_gateway]\n{hosts[0]['name']}\n")
    return KEY_FILE.read_text().strip(), hosts, gateway_inventory


@dataclass
class Fleet:
    """What one bench run deploys: its presets at the first and the rolled-out context, its deployments (None: the
    local fleet's own), and the model the load asks for."""

    kind: str
    hosts: int

    @property
    def model(self) -> str:
        return MODEL if self.kind == "default" else "chat"

    def presets(self, halved: bool) -> dict:
        """Every preset the fleet uses (the override replaces the whole dict: a deployment's preset must stay)."""
        def preset(model: str, ctx: int, alias: str) -> dict:
            return {"model": "{{ llama_fleet_artifacts." + model + " }}", "ctx": ctx // 2 if halved else ctx,
                    "threads": 1, "extra_args": f"--alias {alias}"}
        if self.kind == "default":
            return {"gemma": preset("model", 4096, MODEL), "tiny": preset("tiny_model", 2048, "tiny")}
        return {"chat": preset("tiny_model", 2048, "chat"), "code": preset("tiny_model", 2048, "code")}

    def hand_placed(self, backend: str) -> int:
        """Replicas of a model that are hand-placed instances (they never surge): the default fleet's "main"."""
        return self.hosts if self.kind == "default" and backend == f"model_{MODEL}" else 0

    def extra_vars(self, halved: bool, surge: str) -> dict:
        extra = {"llama_server_presets": self.presets(halved), "llama_fleet_max_surge": surge}
        if self.kind == "tiny":
            key = "{{ lookup('ansible.builtin.file', lookup('ansible.builtin.env', 'LLAMAFLEET_DEMO_KEY_FILE')) }}"
            code = max(1, self.hosts // 4)
            extra["llama_server_instances"] = []
            extra["llama_fleet_deployments"] = [
                {"name": name, "preset": name, "replicas": replicas, "settings": {"host": "{{ ansible_host }}"},
                 "api_key": key}
                for name, replicas in (("chat", max(2, self.hosts - code)), ("code", code))]
        return extra


def deploy(fleet: Fleet, halved: bool, surge: str, gateway_inventory: Path) -> tuple[float, str]:
    """playbooks/deploy-llm.yml on the local fleet's variables and this run's; its duration in seconds, and its
    output."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(fleet.extra_vars(halved, surge), handle)
    started = time.monotonic()
    argv = [VENV / "bin" / "ansible-playbook", "-i", sh(ROOT / "scripts" / "fleet.sh", "inventory").strip(),
            "-i", gateway_inventory, ROOT / "playbooks" / "deploy-llm.yml",
            "-e", f"@{ROOT / 'playbooks' / 'vars' / 'local-fleet.yml'}", "-e", f"@{handle.name}",
            "-e", f"llama_fleet_summary_path={STATE / 'bench-summary.md'}",
            # The fleet's own placement ledger, beside its state (a ledger belongs to one fleet).
            "-e", f"llama_fleet_ledger_path={STATE / 'fleet-ledger.json'}"]
    output = sh(*argv, env={
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "LLAMAFLEET_FLEET_SHARE": str(SHARE),
        "LLAMAFLEET_DEMO_KEY_FILE": str(KEY_FILE), "PATH": f"{VENV / 'bin'}:{os.environ['PATH']}"})
    os.unlink(handle.name)
    return time.monotonic() - started, output


def durations(records: list[dict], kind: str) -> list[float]:
    """The latencies in seconds of the answered requests of one kind ("short" or "stream")."""
    return [record["end"] - record["start"] for record in records if record.get("kind") == kind
            and record.get("status") == 200]


def latencies(records: list[dict], kind: str) -> tuple[float, float]:
    """p50 and p99 (interpolated between ranks: with fewer than 100 samples, nearest-rank would be the maximum)."""
    values = durations(records, kind)
    if len(values) < 2:
        return (values[0], values[0]) if values else (0.0, 0.0)
    return statistics.median(values), statistics.quantiles(values, n=100, method="inclusive")[98]


class Load:
    """bench/gateway_load.py's clients in this process, until stopped."""

    def __init__(self, url: str, clients: int, model: str):
        self.stop_file = Path(tempfile.mkdtemp()) / "stop"
        self.args = argparse.Namespace(url=url, key_file=str(KEY_FILE), model=model, clients=clients,
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
    return (f"| {name} | {len(records)} | {len(durations(records, 'short'))} | {len(failed)} | {short:.2f} / "
            f"{short99:.2f} | {stream:.2f} / {stream99:.2f} | {extra} |")


def post(url: str, body: bytes, headers: dict, timeout: float = 120) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def long_stream(url: str, key: str, model: str, out: dict, stop: threading.Event | None = None) -> None:
    """A 1,500-token streamed completion through the gateway; ``stop`` set ends it early (the client hangs up, and
    the engine stops generating)."""
    body = json.dumps({"model": model, "prompt": "Write a long story about a lighthouse keeper.", "max_tokens": 1500,
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
                if stop is not None and stop.is_set():
                    break
    except OSError as err:
        out["error"] = repr(err)
    out.update(events=events, complete=last == b"data: [DONE]", seconds=time.monotonic() - started)


def direct_engine(fleet: Fleet, hosts: list[dict]) -> str:
    """An engine of the model the load asks for, as it runs now: the default fleet's hand-placed main (port 8080 on
    every host, never moved); for the tiny fleet, a replica of "chat" where the ledger places it now (a surge moves
    replicas to other hosts and ports)."""
    if fleet.kind == "default":
        return f"http://{hosts[-1]['address']}:8080"
    address = {host["name"]: host["address"] for host in hosts}
    ledger = json.loads((STATE / "fleet-ledger.json").read_text())
    for name, entry in sorted(ledger["hosts"].items()):
        for replica in entry.get("placed") or []:
            if replica.get("deployment") == fleet.model and name in address:
                return f"http://{address[name]}:{replica['port']}"
    raise SystemExit(f"no replica of {fleet.model} in the ledger {STATE / 'fleet-ledger.json'}")


def overhead(gateway: str, direct: str, key: str, model: str, rounds: int = 30) -> tuple[float, float]:
    body = json.dumps({"model": model, "prompt": "The capital of France is", "n_predict": 4, "temperature": 0,
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


def bad_requests(url: str, key: str, model: str, gateway_host: dict) -> list[str]:
    chat = url + "/v1/chat/completions"
    good = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    cases = [
        ("unknown model", chat, json.dumps({"model": "gpt-9", "messages": []}).encode(), good),
        ("no key", chat, json.dumps({"model": model, "messages": []}).encode(), {"Content-Type": "application/json"}),
        ("wrong key", chat, json.dumps({"model": model, "messages": []}).encode(),
         {**good, "Authorization": "Bearer wrong-key-0000"}),
        ("body over the limit (2 MiB)", chat, json.dumps({"model": model, "prompt": "x" * (2 << 20)}).encode(), good),
        ("malformed JSON", chat, b'{"model": "' + model.encode() + b'", "messages": [', good),
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


def rotation_rows(steady: dict, during: dict, fleet: Fleet, surge: str) -> list[str]:
    """Per model: N (the most in rotation in steady state), the fewest during the rollout, and the goal."""
    bounds = read_bounds(max_surge=surge, names=("llama_fleet_max_unavailable", "llama_fleet_max_surge"))
    lines = []
    for backend in sorted(during["backends"]):
        replicas = steady["backends"].get(backend, {}).get("max", 0)
        seen = during["backends"][backend]["min"]
        # With surge, only the hand-placed replicas (drained first, within the bound) may be out of rotation.
        out = min(bounds.unavailable(replicas), fleet.hand_placed(backend)) if bounds.surge(replicas) \
            else bounds.unavailable(replicas)
        goal = replicas - out
        lines.append(f"| {backend} | {replicas} | {seen} | {goal} | {'met' if seen >= goal else 'MISSED'} |")
    return lines


def surge_notes(output: str) -> str:
    """The placement's surge note in a run's output (how many replicas started a new copy first), or "none"."""
    found = re.search(r"\d+ replica\(s\) start a new copy first", output)
    return found.group(0) if found else "none"


def steady_state(url: str, key: str, fleet: Fleet, *, clients: int, seconds: float,
                 sampler: gateway_rotation.RotationSampler) -> dict:
    """The rollout's load without a rollout: the clients and a long stream (it holds one replica's slot)."""
    steady_from = time.time()
    hang_up, steady_stream = threading.Event(), {}
    with Load(url, clients, fleet.model) as load:
        streamer = threading.Thread(target=long_stream, args=(url, key, fleet.model, steady_stream, hang_up))
        streamer.start()
        time.sleep(seconds)
        hang_up.set()
    streamer.join()
    return {"records": load.records, "seconds": seconds, "rotation": sampler.summary(steady_from, time.time())}


def rollout(fleet: Fleet, *, halved: bool, surge: str, gateway_inventory: Path, url: str, key: str, clients: int,
            sampler: gateway_rotation.RotationSampler, steady: dict, heading: str) -> dict:
    """One measured rollout under load (to the halved contexts or back), and its tables; what the pooled table of
    several rounds needs."""
    stream: dict = {}
    with Load(url, clients, fleet.model) as during:
        streamer = threading.Thread(target=long_stream, args=(url, key, fleet.model, stream))
        streamer.start()
        time.sleep(1)
        rollout_from = time.time()
        seconds, output = deploy(fleet, halved, surge, gateway_inventory)
        rollout_until = time.time()
    streamer.join()
    rotation = sampler.summary(rollout_from, rollout_until)
    what = "every context halved" if halved else "every context back"
    print(f"\n### {heading}rollout ({what}), llama_fleet_max_surge {surge}\n")
    print("| phase | requests | short requests | failed | short p50 / p99 | stream p50 / p99 | |")
    print("|---|---|---|---|---|---|---|")
    print(row(f"steady ({steady['seconds']:.0f} s)", steady["records"]))
    print(row(f"rollout: {what}", during.records, f"rollout {seconds:.1f} s"))
    _short50, steady99 = latencies(steady["records"], "short")
    _short50, rollout99 = latencies(during.records, "short")
    ratio = rollout99 / steady99 if steady99 else 0.0
    if steady99:
        print(f"\nshort p99 during the rollout / steady: {ratio:.2f}x (the goal: at most 2x)")
    print(f"\nreplicas in rotation (the gateway's exporter, {rotation['samples']} samples during the rollout, "
          f"longest gap {rotation['longest_gap_s']:.3f} s, {sampler.errors} failed fetches); the placement: "
          f"{surge_notes(output)}\n")
    print("| backend | N (steady) | fewest during the rollout | goal | |\n|---|---|---|---|---|")
    rows = rotation_rows(steady["rotation"], rotation, fleet, surge)
    print("\n".join(rows))
    print(f"\nlong stream across the rollout: {stream.get('events', 0)} events, "
          f"{'complete' if stream.get('complete') else 'NOT complete'} in {stream.get('seconds', 0):.1f} s"
          f"{' ' + stream['error'] if stream.get('error') else ''}", flush=True)
    return {"surge": surge, "records": during.records, "seconds": seconds, "ratio": ratio,
            "rotation_met": all(line.endswith("| met |") for line in rows), "stream_complete": bool(
                stream.get("complete"))}


def pooled_rows(steadies: list[dict], rollouts: list[dict]) -> list[str]:
    """Per surge setting, the rounds' requests pooled: the short p99 of all the steady states against that of all
    its rollouts, with their numbers of samples, and the median of the rounds' own ratios."""
    steady_records = [record for steady in steadies for record in steady["records"]]
    _p50, steady99 = latencies(steady_records, "short")
    lines = []
    for surge in dict.fromkeys(result["surge"] for result in rollouts):
        mine = [result for result in rollouts if result["surge"] == surge]
        records = [record for result in mine for record in result["records"]]
        _p50, rollout99 = latencies(records, "short")
        ratio = rollout99 / steady99 if steady99 else 0.0
        each = ", ".join(f"{result['ratio']:.2f}" for result in mine)
        lines.append(
            f"| {surge} | {len(mine)} | {len(durations(steady_records, 'short'))} / {len(durations(records, 'short'))}"
            f" | {len(gateway_load.failures(records))} | {steady99:.2f} / {rollout99:.2f} s | **{ratio:.2f}x** | "
            f"{statistics.median(result['ratio'] for result in mine):.2f}x "
            f"({each}) | "
            f"{sum(result['rotation_met'] for result in mine)}/{len(mine)} | "
            f"{sum(result['stream_complete'] for result in mine)}/{len(mine)} | "
            f"{statistics.median(result['seconds'] for result in mine):.1f} s |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--fleet", choices=("default", "tiny"), default="default")
    parser.add_argument("--surge", default="0",
                        help="llama_fleet_max_surge for the rollout (0, a number, N%%); two, comma-separated "
                             "(0,100%%): the first for the rollout, the second for the measured rollout back")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--steady-s", type=float, default=60)
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of a steady state and the rollout(s); with more than one, a pooled table")
    parser.add_argument("--skip-extras", action="store_true",
                        help="only the rollout (no gateway overhead, no bad requests): the CI smoke step")
    args = parser.parse_args()
    fleet = Fleet(args.fleet, args.hosts)
    surges = [part.strip() for part in args.surge.split(",") if part.strip()] or ["0"]

    key, hosts, gateway_inventory = start_fleet(args.hosts)
    first, _output = deploy(fleet, False, surges[0], gateway_inventory)
    url = f"http://{hosts[0]['address']}:8000"
    sampler = gateway_rotation.RotationSampler(f"http://{hosts[0]['address']}:8405/metrics", key).start()

    print(f"\n{args.hosts} hosts, fleet {args.fleet}, {args.clients} clients asking for {fleet.model}; first deploy "
          f"{first:.1f} s; latency p50 / p99 in seconds (short: 8 tokens; stream: 48 tokens)")
    common = {"gateway_inventory": gateway_inventory, "url": url, "key": key, "clients": args.clients,
              "sampler": sampler}
    steadies, rollouts = [], []
    for number in range(1, args.rounds + 1):
        heading = f"round {number} of {args.rounds}: " if args.rounds > 1 else ""
        steadies.append(steady_state(url, key, fleet, clients=args.clients, seconds=args.steady_s,
                                     sampler=sampler))
        rollouts.append(rollout(fleet, halved=True, surge=surges[0], steady=steadies[-1], heading=heading,
                                **common))
        if len(surges) > 1:
            rollouts.append(rollout(fleet, halved=False, surge=surges[1], steady=steadies[-1], heading=heading,
                                    **common))
        elif number < args.rounds:
            deploy(fleet, False, surges[0], gateway_inventory)  # back, unmeasured, for the next round
    if args.rounds > 1:
        print(f"\n### {args.rounds} rounds pooled\n")
        print("| surge | rollouts | short requests steady / rollouts | failed | short p99 steady / rollouts | ratio "
              "| rounds' ratios, median (each) | rotation goal met | long stream complete | rollout, median |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(pooled_rows(steadies, rollouts)), flush=True)
    sampler.stop()
    if not args.skip_extras:
        through, straight = overhead(url, direct_engine(fleet, hosts), key, fleet.model)
        print(f"\ngateway overhead: median {through * 1000:.1f} ms through the gateway, {straight * 1000:.1f} ms "
              f"direct: ratio {through / straight:.3f}")
        print("\n| bad request | status | error type | requests engines saw |\n|---|---|---|---|", flush=True)
        print("\n".join(bad_requests(url, key, fleet.model, hosts[0])), flush=True)
    if len(surges) == 1:
        deploy(fleet, False, surges[0], gateway_inventory)  # back to the first presets, for the next run


if __name__ == "__main__":
    main()
