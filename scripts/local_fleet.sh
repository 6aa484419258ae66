#!/usr/bin/env bash
# The README's main command (`make deploy-local`): a local fleet of two systemd
# hosts (systemd-nspawn, scripts/fleet.sh) running the real CPU llama-server and
# the Gemma-3-270M model, deployed by playbooks/deploy-llm.yml; then the fleet
# summary and one completion from each host. The hosts stay up afterwards
# (`make fleet-down` stops them). Needs root and systemd-container.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
venv=${VENV:-$root/.venv}
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
export LLAMAFLEET_FLEET_SHARE=${LLAMAFLEET_FLEET_SHARE:-$cache/fleet-share}
export LLAMAFLEET_DEMO_KEY_FILE=${LLAMAFLEET_DEMO_KEY_FILE:-$cache/fleet/demo-api-key}
size=${FLEET_SIZE:-2}

"$here/fleet_artifacts.sh" "$LLAMAFLEET_FLEET_SHARE" >/dev/null
"$here/fleet.sh" up "$size"

# The demo's API key: random, made once, readable by root only.
if [ ! -s "$LLAMAFLEET_DEMO_KEY_FILE" ]; then
  mkdir -p "$(dirname "$LLAMAFLEET_DEMO_KEY_FILE")"
  (umask 077 && python3 -c 'import secrets; print("llf-" + secrets.token_urlsafe(24), end="")' \
    >"$LLAMAFLEET_DEMO_KEY_FILE")
fi

"$venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1]); import conftest' "$root"
# Only what changed, failed or has a message (the summary) is printed; ANSIBLE_STDOUT_CALLBACK=default shows all.
ANSIBLE_STDOUT_CALLBACK=${ANSIBLE_STDOUT_CALLBACK:-llamafleet.llamacpp.fleet} \
ANSIBLE_COLLECTIONS_PATH="$root/.collections" PATH="$venv/bin:$PATH" \
  "$venv/bin/ansible-playbook" -i "$("$here/fleet.sh" inventory)" "$root/playbooks/deploy-llm.yml" \
  -e "@$root/playbooks/vars/local-fleet.yml" -e "llama_fleet_summary_path=$root/fleet-summary.md"

echo
echo "One completion per host (the key from $LLAMAFLEET_DEMO_KEY_FILE):"
"$here/fleet.sh" hosts | python3 -c '
import json, sys, urllib.request
key = open(sys.argv[1]).read().strip()
for host in json.load(sys.stdin)["hosts"]:
    name, address = host["name"], host["address"]
    body = json.dumps({"prompt": "The capital of France is", "n_predict": 12, "temperature": 0}).encode()
    request = urllib.request.Request(
        "http://%s:8080/completion" % address, data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(request, timeout=120) as resp:
        answer = json.load(resp)
    print("%s (%s): The capital of France is%s" % (name, address, answer["content"]))
' "$LLAMAFLEET_DEMO_KEY_FILE"
echo
echo "Summary written to $root/fleet-summary.md; stop the hosts with: make fleet-down"
