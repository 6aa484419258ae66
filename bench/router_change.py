"""A router instance on the local fleet (scripts/fleet.sh): cold and warm requests, scrapes, and a change of one
model's preset under load.

    bench/router_change.py [--rounds 3] [--clients 2] [--change-s 0]

Brings up two nspawn hosts and deploys the embedded default of `make deploy-local` (playbooks/vars/local-fleet.yml),
whose first host runs the router instance "team" (models team-gemma and team-tiny, docs/router.md) beside the
gateway. Then measures, in one run:

- cold and warm: each router model unloaded (``POST /models/unload``), then asked through the gateway twice: the
  first request waits for the model to load, the second finds it loaded; each --rounds times, medians printed;
- scrapes: both models unloaded, then each one's scrape target read as Prometheus reads it
  (``/metrics?model=<id>&autoload=false``, 5 times each): the status codes, and each model's status afterwards
  (the goal: still unloaded);
- a change of team-tiny's context (CTX 2048 to 1024) by the deploy playbook, while --clients clients ask team-gemma
  and one client asks team-tiny through the gateway, short completions without pause: requests and failures per
  model (the goal: 0 failed), the router's PID and each child's PID before and after (the goal: the router and
  team-gemma's child unchanged, team-tiny's child new), the models the gateway drained (the goal: team-tiny only),
  what the fleet summary says of the instance, and the deploy's duration; then the change back, measured the same
  way.

Needs root (systemd-nspawn), like `make deploy-local`; the hosts stay up (`make fleet-down`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
from rollout_under_load import KEY_FILE, SHARE, STATE, VENV, sh, start_fleet  # noqa: E402

ROUTER_PORT = 8090  # playbooks/vars/local-fleet.yml: llama_fleet_demo_router
ROUTER, MODELS = "team", ("team-gemma", "team-tiny")
SSH_KEY = STATE / "id_ed25519"


def router_vars(tiny_ctx: int | None) -> dict:
    """The local fleet's router, with team-tiny's context changed (None: as the vars file has it)."""
    key = "{{ lookup('ansible.builtin.file', lookup('ansible.builtin.env', 'LLAMAFLEET_DEMO_KEY_FILE')) }}"
    tiny = {"name": "team-tiny", "preset": "tiny"}
    if tiny_ctx is not None:
        tiny["settings"] = {"ctx": tiny_ctx}
    return {"llama_fleet_demo_router": {"name": ROUTER, "host": "{{ ansible_host }}", "port": ROUTER_PORT,
                                        "api_key": key, "models": [{"name": "team-gemma", "preset": "gemma"}, tiny]}}


def deploy(extra: dict, gateway_inventory: Path) -> tuple[float, str, list[str]]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(extra, handle)
    summary = STATE / "router-bench-summary.md"
    started = time.monotonic()
    argv = [VENV / "bin" / "ansible-playbook", "-i", sh(ROOT / "scripts" / "fleet.sh", "inventory").strip(),
            "-i", gateway_inventory, ROOT / "playbooks" / "deploy-llm.yml",
            "-e", f"@{ROOT / 'playbooks' / 'vars' / 'local-fleet.yml'}", "-e", f"@{handle.name}",
            "-e", f"llama_fleet_summary_path={summary}", "-e", f"llama_fleet_ledger_path={STATE / 'fleet-ledger.json'}"]
    env = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"),
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "LLAMAFLEET_FLEET_SHARE": str(SHARE),
           "LLAMAFLEET_DEMO_KEY_FILE": str(KEY_FILE), "PATH": f"{VENV / 'bin'}:{os.environ['PATH']}"}
    output = sh(*argv, env=env)
    os.unlink(handle.name)
    row = next((line for line in summary.read_text().splitlines() if f"| {ROUTER} |" in line), "")
    # What the gateway drained for the router's step (the role's "drained, ..." lines name the servers).
    pattern = r'"[^"]*:' + ROUTER + r'_([A-Za-z0-9.-]+?)-[0-9a-f]{8}: drained'
    drained = sorted({match.group(1) for match in re.finditer(pattern, output)})
    return time.monotonic() - started, row.rstrip(" |").rsplit("|", 1)[-1].strip() or "-", drained


def call(url: str, key: str, body: dict | None = None, timeout: float = 300) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            text = answer.read()
            return answer.status, json.loads(text) if text.strip().startswith(b"{") else {}
    except urllib.error.HTTPError as err:
        return err.code, {}


def statuses(router: str, key: str) -> dict[str, str]:
    return {entry["id"]: entry["status"]["value"] for entry in call(f"{router}/v1/models", key)[1]["data"]}


def unload(router: str, key: str, model: str) -> None:
    if statuses(router, key).get(model) == "unloaded":
        return
    call(f"{router}/models/unload", key, {"model": model})
    deadline = time.monotonic() + 30
    while statuses(router, key).get(model) != "unloaded":
        if time.monotonic() > deadline:
            raise SystemExit(f"{model} did not unload within 30 s")
        time.sleep(0.2)


def timed_completion(gateway: str, key: str, model: str) -> float:
    started = time.monotonic()
    body = {"model": model, "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}
    status = call(f"{gateway}/v1/completions", key, body)[0]
    if status != 200:
        raise SystemExit(f"{model} through the gateway: HTTP {status}")
    return time.monotonic() - started


def pids(address: str) -> dict[str, int]:
    """The router's main PID and each child's, by the --alias the router gives it (its model id)."""
    script = (f"systemctl show -p MainPID --value llama-server-{ROUTER}; "
              + "; ".join(f"pgrep -f -- '--alias {model}( |$)' | head -1 || true" for model in MODELS))
    found = subprocess.run(["ssh", "-i", str(SSH_KEY), "-o", "StrictHostKeyChecking=no", "-o",
                            "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", f"root@{address}", script],
                           capture_output=True, text=True, check=True).stdout.split("\n")
    values = [int(line) if line.strip().isdigit() else 0 for line in found]
    return dict(zip(("router", *MODELS), values + [0] * 3, strict=False))


def load(gateway: str, key: str, model: str, stop: threading.Event, records: list) -> None:
    while not stop.is_set():
        records.append({**gateway_load.one_request(gateway, key, model, False, 120), "model": model})


def change(gateway: str, router: str, key: str, address: str, gateway_inventory: Path, *, tiny_ctx: int | None,
           clients: int) -> str:
    for model in MODELS:
        timed_completion(gateway, key, model)  # both loaded: the change must not touch team-gemma's child
    before = pids(address)
    stop, records = threading.Event(), []
    threads = [threading.Thread(target=load, args=(gateway, key, "team-gemma", stop, records))
               for _client in range(clients)]
    threads.append(threading.Thread(target=load, args=(gateway, key, "team-tiny", stop, records)))
    for thread in threads:
        thread.start()
    time.sleep(2)
    took, detail, drained = deploy(router_vars(tiny_ctx), gateway_inventory)
    time.sleep(2)
    stop.set()
    for thread in threads:
        thread.join()
    timed_completion(gateway, key, "team-tiny")  # loaded again, with its new context
    after = pids(address)
    counts = []
    for model in MODELS:
        mine = [record for record in records if record["model"] == model]
        failed = [record for record in mine if record["status"] != 200 or not record["complete"]]
        counts.append(f"{model}: {len(mine)} requests, {len(failed)} failed"
                      + (f" ({failed[0].get('status')}: {failed[0].get('error', '')[:80]})" if failed else ""))
    same = {name: "same" if before[name] == after[name] else "new" for name in before}
    pid_words = ", ".join(f"{name} {before[name]} -> {after[name]} ({same[name]})" for name in before)
    return (f"| {'CTX 2048 -> ' + str(tiny_ctx) if tiny_ctx else 'CTX back to 2048'} | {took:.1f} s | {detail} | "
            f"{', '.join(drained) or 'none'} | {'; '.join(counts)} | {pid_words} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=2)
    args = parser.parse_args()
    key, hosts, gateway_inventory = start_fleet(2)
    first, detail, _drained = deploy(router_vars(None), gateway_inventory)
    address = hosts[0]["address"]
    gateway, router = f"http://{address}:8000", f"http://{address}:{ROUTER_PORT}"
    print(f"\nrouter {ROUTER} on {hosts[0]['name']} ({router}); first deploy {first:.1f} s ({detail})\n")

    print("| model | cold through the gateway, median (each) | warm, median (each) |\n|---|---|---|")
    for model in MODELS:
        cold, warm = [], []
        for _round in range(args.rounds):
            unload(router, key, model)
            cold.append(timed_completion(gateway, key, model))
            warm.append(timed_completion(gateway, key, model))
        print(f"| {model} | {statistics.median(cold):.2f} s ({', '.join(f'{v:.2f}' for v in cold)}) | "
              f"{statistics.median(warm):.2f} s ({', '.join(f'{v:.2f}' for v in warm)}) |", flush=True)

    print("\n| scraped model | /metrics?model=ID&autoload=false, 5 times | status after |\n|---|---|---|")
    for model in MODELS:
        unload(router, key, model)
    for model in MODELS:
        codes = [call(f"{router}/metrics?model={model}&autoload=false", key)[0] for _scrape in range(5)]
        print(f"| {model} | {', '.join(map(str, codes))} | {statuses(router, key)[model]} |", flush=True)

    print(f"\n| change (team-tiny) | deploy | summary says | drained on the gateway | under load ({args.clients} "
          "clients on team-gemma, 1 on team-tiny) | PIDs before -> after |\n|---|---|---|---|---|---|")
    print(change(gateway, router, key, address, gateway_inventory, tiny_ctx=1024, clients=args.clients), flush=True)
    print(change(gateway, router, key, address, gateway_inventory, tiny_ctx=None, clients=args.clients), flush=True)


if __name__ == "__main__":
    main()
