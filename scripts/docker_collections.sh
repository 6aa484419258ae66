#!/usr/bin/env bash
# Put community.docker (for docker_compose_v2) into a collections tree without
# Ansible Galaxy, which this machine cannot reach. PyPI can be reached, and the
# `ansible` community package is a wheel that carries its collections as plain
# files: ansible 12.3.0 (the release for ansible-core 2.19) holds
# community.docker 4.8.5. We download that one wheel once (cached, checked
# against the sha256 pinned below) and extract only the collections we need.
#
# Usage: scripts/docker_collections.sh [COLLECTIONS_DIR]   (default: the repo's
#        .collections, the tree conftest.py makes; use it with
#        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_DIR)
# Prints the collections directory. Idempotent: a collection already there in
# the pinned version is left alone. Only COLLECTIONS_DIR/ansible_collections/
# community/<name> is written: the llamafleet/llamacpp symlink of conftest.py
# stays as it is.
#
# Collections taken: community.docker, and community.library_inventory_filtering_v1,
# which community.docker's MANIFEST.json lists as a dependency (its inventory
# plugins use it; docker_compose_v2 does not, but it is 22 small files and keeps
# `ansible-galaxy collection list` and ansible-lint free of a missing dependency).
#
# Environment: LLAMAFLEET_CACHE (default ~/.cache/llamafleet; the wheel goes to
# $LLAMAFLEET_CACHE/wheels), VENV (the Python whose pip downloads, default the
# repo's .venv, else python3).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
target=$(realpath -m "${1:-$root/.collections}")
venv=${VENV:-$root/.venv}

ansible_version=12.3.0
wheel_name="ansible-$ansible_version-py3-none-any.whl"
# sha256 of the wheel on PyPI (files.pythonhosted.org), computed once by hand.
wheel_sha256=cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414
# namespace.name=version, as the wheel's MANIFEST.json files say.
collections=(community.docker=4.8.5 community.library_inventory_filtering_v1=1.1.5)

log() { echo "docker-collections: $*" >&2; }
die() { echo "docker-collections: error: $*" >&2; exit 1; }

python=$venv/bin/python
[ -x "$python" ] || python=$(command -v python3) || die "no python3"

# The version in an installed collection's MANIFEST.json; empty when there is none.
installed_version() {
  "$python" - "$1/MANIFEST.json" <<'EOF' 2>/dev/null || true
import json, sys
print(json.load(open(sys.argv[1]))["collection_info"]["version"])
EOF
}

missing=()
for entry in "${collections[@]}"; do
  fqcn=${entry%%=*}
  version=${entry#*=}
  dest="$target/ansible_collections/${fqcn%%.*}/${fqcn#*.}"
  [ "$(installed_version "$dest")" = "$version" ] || missing+=("$entry")
done
if [ ${#missing[@]} -eq 0 ]; then
  log "present: ${collections[*]}"
  echo "$target"
  exit 0
fi

wheels="$cache/wheels"
wheel="$wheels/$wheel_name"
mkdir -p "$wheels"
if ! [ -f "$wheel" ] || [ "$(sha256sum "$wheel" | cut -d' ' -f1)" != "$wheel_sha256" ]; then
  stage=$(mktemp -d "$wheels/.ansible.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  log "downloading $wheel_name"
  "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.11 -d "$stage" "ansible==$ansible_version" >&2
  [ -f "$stage/$wheel_name" ] || die "pip did not download $wheel_name"
  got=$(sha256sum "$stage/$wheel_name" | cut -d' ' -f1)
  [ "$got" = "$wheel_sha256" ] || die "$wheel_name: sha256 $got, expected $wheel_sha256"
  mv -f "$stage/$wheel_name" "$wheel"
  rm -rf "$stage"
  trap - EXIT
fi

# Extract each missing collection into a temporary sibling, check its
# MANIFEST.json version, then swap it in (a present directory is complete).
for entry in "${missing[@]}"; do
  fqcn=${entry%%=*}
  version=${entry#*=}
  namespace_dir="$target/ansible_collections/${fqcn%%.*}"
  dest="$namespace_dir/${fqcn#*.}"
  mkdir -p "$namespace_dir"
  stage=$(mktemp -d "$namespace_dir/.${fqcn#*.}.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  "$python" - "$wheel" "ansible_collections/${fqcn%%.*}/${fqcn#*.}/" "$stage" <<'EOF'
import os, sys, zipfile

wheel, prefix, stage = sys.argv[1:]
count = 0
with zipfile.ZipFile(wheel) as archive:
    for info in archive.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        relative = info.filename[len(prefix):]
        if relative.startswith("/") or ".." in relative.split("/"):
            raise SystemExit("unsafe path in wheel: " + info.filename)
        path = os.path.join(stage, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with archive.open(info) as src, open(path, "wb") as dst:
            dst.write(src.read())
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(path, mode or 0o644)
        count += 1
if not count:
    raise SystemExit("nothing under " + prefix + " in " + wheel)
EOF
  got=$(installed_version "$stage")
  [ "$got" = "$version" ] || die "$fqcn in $wheel_name is version '${got}', expected $version"
  chmod 0755 "$stage"
  rm -rf "$dest"
  mv "$stage" "$dest"
  trap - EXIT
  log "$fqcn $version -> $dest"
done
echo "$target"
