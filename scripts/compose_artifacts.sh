#!/usr/bin/env bash
# What the compose molecule scenario deploys from, on this machine: the shared
# artifacts of scripts/fleet_artifacts.sh (model, planning wheels) in SHARE_DIR,
# a running private Docker engine (scripts/docker_engine.sh) and the CPU engine
# image (scripts/engine_image.sh), described in SHARE_DIR/docker.json:
# {"image": <tag>, "docker_host": "unix://...", "docker_config": <dir whose
# cli-plugins/ holds compose v2>, "compose_bin": <compose v2 binary>}.
#
# Usage: scripts/compose_artifacts.sh SHARE_DIR   -> prints SHARE_DIR/docker.json
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
share=${1:?usage: scripts/compose_artifacts.sh SHARE_DIR}
"$here/fleet_artifacts.sh" "$share" >&2
"$here/docker_engine.sh" up >&2
eval "$("$here/docker_engine.sh" env)"
image=$("$here/engine_image.sh")
python3 - "$share/docker.json" "$image" <<'PY'
import json, os, sys
path, image = sys.argv[1], sys.argv[2]
data = {
    "image": image,
    "docker_host": os.environ["DOCKER_HOST"],
    "docker_config": os.environ["DOCKER_CONFIG"],
    "compose_bin": os.environ["LLAMAFLEET_COMPOSE_BIN"],
}
tmp = path + ".tmp"
with open(tmp, "w", encoding="utf-8") as handle:
    json.dump(data, handle, indent=2, sort_keys=True)
    handle.write("\n")
os.replace(tmp, path)
PY
echo "$share/docker.json"
