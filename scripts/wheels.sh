#!/usr/bin/env bash
# Download the wheels the module runtime venv needs on a TARGET host (Debian
# bookworm: CPython 3.11, x86_64, glibc 2.36), so targets without a package
# index install them offline:
#   python3 -m venv VENV && VENV/bin/pip install --no-index --find-links DIR -r DIR/requirements.txt
#
# Usage: scripts/wheels.sh   -> prints the wheel directory (cached, keyed by the
#                               requirements and the target tags below)
set -euo pipefail

cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
# The module runtime: gguf (GGUF metadata), nvidia-ml-py (pynvml, the GPU probe).
requirements=(gguf==0.19.0 nvidia-ml-py==13.615.71)
# The target interpreter. --platform lists every manylinux tag a glibc-2.36
# system accepts; pip then picks what the target's pip would pick.
python_version=3.11
abi=cp311
arch=x86_64
glibc_minor_max=36
platforms=(manylinux2014_"$arch" manylinux2010_"$arch" manylinux1_"$arch")
for minor in $(seq 5 "$glibc_minor_max"); do platforms+=("manylinux_2_${minor}_$arch"); done

key=$(printf '%s\n' "${requirements[@]}" "$python_version" "$abi" "${platforms[@]}" | sha256sum | cut -c1-12)
dir="$cache/wheels/$abi-$arch-$key"

if [ -f "$dir/requirements.txt" ]; then
  echo "$dir"
  exit 0
fi

venv="$cache/tools-venv"   # shared with fetch_model.sh: a controller-side pip
if ! [ -x "$venv/bin/python" ]; then
  python=$(command -v python3.11 || command -v python3)
  "$python" -m venv "$venv" >&2
fi

platform_args=()
for platform in "${platforms[@]}"; do platform_args+=(--platform "$platform"); done
mkdir -p "$cache/wheels"
stage=$(mktemp -d "$cache/wheels/.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
"$venv/bin/python" -m pip download -q --disable-pip-version-check --only-binary=:all: \
  --python-version "$python_version" --implementation cp --abi "$abi" "${platform_args[@]}" \
  -d "$stage" "${requirements[@]}" >&2
printf '%s\n' "${requirements[@]}" >"$stage/requirements.txt"
chmod 0755 "$stage"   # mktemp made it 0700; the role copies it as it is
rm -rf "$dir"
mv "$stage" "$dir"
trap - EXIT
echo "$dir"
