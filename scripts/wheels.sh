#!/usr/bin/env bash
# Download the wheels of the planning runtime the role builds on a TARGET host (the venv at
# llama_server_venv), so targets without a package index install it offline:
#   python3 -m venv VENV && VENV/bin/pip install --no-index --no-deps --find-links DIR -r DIR/requirements.txt
#
# Usage: scripts/wheels.sh   -> prints the wheel directory (cached, keyed by the requirements)
#
# The runtime is installed without dependencies (the role's pip --no-deps): the modules read gguf's constants
# table, not its numpy-based reader, and nvidia-ml-py needs nothing. Both are pure-Python wheels, so one
# directory serves every target Python the collection supports (3.10 to 3.13: gguf needs 3.10) on any
# architecture; the script refuses a wheel that is not py3-none-any rather than ship one that fits one target.
set -euo pipefail

cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
# Keep in step with llama_server_module_packages (roles/llama_server/defaults/main.yml).
requirements=(gguf==0.19.0 nvidia-ml-py==13.615.71)
recipe=2   # 1 was cp311/x86_64 with gguf's dependencies (numpy, requests, ...)

key=$(printf '%s\n' "$recipe" "${requirements[@]}" | sha256sum | cut -c1-12)
dir="$cache/wheels/py3-none-any-$key"

if [ -f "$dir/requirements.txt" ]; then
  echo "$dir"
  exit 0
fi

here=$(cd "$(dirname "$0")" && pwd)
venv="$cache/tools-venv"   # a controller-side pip (scripts/tools_venv.sh)
"$here/tools_venv.sh" >/dev/null

mkdir -p "$cache/wheels"
stage=$(mktemp -d "$cache/wheels/.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
"$venv/bin/python" -m pip download -q --disable-pip-version-check --only-binary=:all: --no-deps \
  -d "$stage" "${requirements[@]}" >&2
for wheel in "$stage"/*.whl; do
  case "$wheel" in
    *-py3-none-any.whl) ;;
    *) echo "wheels: $(basename "$wheel") is not a pure-Python wheel; it would fit only some targets" >&2; exit 1 ;;
  esac
done
printf '%s\n' "${requirements[@]}" >"$stage/requirements.txt"
chmod 0755 "$stage"   # mktemp made it 0700; the role copies it as it is
rm -rf "$dir"
mv "$stage" "$dir"
trap - EXIT
echo "$dir"
