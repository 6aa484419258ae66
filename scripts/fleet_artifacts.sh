#!/usr/bin/env bash
# Put the real parts the llama_server role deploys on the local fleet into the
# fleet's share directory (bound read-only at /srv/llamafleet in every host:
# LLAMAFLEET_FLEET_SHARE of scripts/fleet.sh), and describe them for playbooks.
#
# Usage: [LLAMAFLEET_FLEET_MODEL=gemma|tiny] scripts/fleet_artifacts.sh SHARE_DIR   -> prints SHARE_DIR/artifacts.json
#
# artifacts.json: {"engine_archive": <file name in the share>, "engine_checksum":
# "sha256:<hex>", "engine_version": "b<build>", "model": <file name in the share>,
# "model_checksum": "sha256:<hex>", "tiny_model", "tiny_model_checksum" (the
# tiny random model, always there: the local fleet's placed deployments serve
# it too), "wheels_dir": <controller directory of the module runtime's wheels>}. The hosts fetch file:///srv/llamafleet/<name> with
# the checksum, as they would fetch a release from its URL.
#
# Builds/fetches what is missing through scripts/engine_archive.sh,
# scripts/fetch_model.sh and scripts/wheels.sh (all cached). Files are
# hard-linked into the share when it is on the same file system, else copied.
# The model's sha256 is cached next to the share's copy (hashing 250 MB on
# every run would cost a second each time).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
share=${1:?usage: scripts/fleet_artifacts.sh SHARE_DIR}
mkdir -p "$share"
share=$(cd "$share" && pwd -P)

read -r archive archive_checksum < <("$here/engine_archive.sh")
# The model the hosts serve: Gemma-3-270M (real text), or the tiny random model (scripts/tiny_model.sh, 5 MB)
# where only the deployment is measured, as the 8-host benches do.
case "${LLAMAFLEET_FLEET_MODEL:-gemma}" in
  gemma) model=$("$here/fetch_model.sh") ;;
  tiny) model=$("$here/tiny_model.sh") ;;
  *) echo "LLAMAFLEET_FLEET_MODEL must be gemma or tiny, not ${LLAMAFLEET_FLEET_MODEL}" >&2; exit 2 ;;
esac
tiny=$("$here/tiny_model.sh")
wheels=$("$here/wheels.sh")

# Same content under the same name in the share; an unchanged file stays untouched.
place() {
  local src=$1 dest
  dest="$share/$(basename "$src")"
  if [ "$src" -ef "$dest" ]; then return 0; fi
  if [ -f "$dest" ] && cmp -s "$src" "$dest"; then return 0; fi
  ln -f "$src" "$dest" 2>/dev/null || { cp -f "$src" "$dest.partial" && mv -f "$dest.partial" "$dest"; }
}
place "$archive"
place "$model"
place "$tiny"

checksum() {
  local in_share sum_file
  in_share="$share/$(basename "$1")"
  sum_file="$share/.$(basename "$1").sha256"
  if ! [ -f "$sum_file" ] || [ "$in_share" -nt "$sum_file" ]; then
    sha256sum "$in_share" | cut -d' ' -f1 >"$sum_file.partial"
    mv -f "$sum_file.partial" "$sum_file"
  fi
  echo "sha256:$(cat "$sum_file")"
}
model_checksum=$(checksum "$model")
tiny_checksum=$(checksum "$tiny")

# llama-server-b11434-linux-x86_64-cpu.tar.gz -> b11434
version=$(basename "$archive" | sed -n 's/^llama-server-\(b[0-9][0-9]*\)-.*/\1/p')
[ -n "$version" ] || { echo "cannot read the engine version from $archive" >&2; exit 1; }

python3 - "$share/artifacts.json" "$(basename "$archive")" "$archive_checksum" "$version" \
  "$(basename "$model")" "$model_checksum" "$wheels" "$(basename "$tiny")" "$tiny_checksum" <<'EOF'
import json
import os
import sys

path, archive, archive_checksum, version, model, model_checksum, wheels, tiny, tiny_checksum = sys.argv[1:]
data = {
    "tiny_model": tiny,
    "tiny_model_checksum": tiny_checksum,
    "engine_archive": archive,
    "engine_checksum": archive_checksum,
    "engine_version": version,
    "model": model,
    "model_checksum": model_checksum,
    "wheels_dir": wheels,
}
text = json.dumps(data, indent=2, sort_keys=True) + "\n"
try:
    with open(path, encoding="utf-8") as handle:
        if handle.read() == text:
            sys.exit(0)
except OSError:
    pass
with open(path + ".partial", "w", encoding="utf-8") as handle:
    handle.write(text)
os.replace(path + ".partial", path)
EOF
echo "$share/artifacts.json"
