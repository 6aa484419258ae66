#!/usr/bin/env bash
# Print a working interpreter of one CPython version (e.g. 3.12): pyenv's build first, since pyenv's shims on
# PATH may exist without running, then PATH's python3.12.
#
# Usage: scripts/find_python.sh VERSION
set -euo pipefail
version=${1:?usage: scripts/find_python.sh VERSION}
root=${PYENV_ROOT:-$HOME/.pyenv}
mapfile -t candidates < <(find "$root/versions" -maxdepth 3 -path "*/versions/$version.*/bin/python$version" \
  2>/dev/null | sort -V -r)
candidates+=("$(command -v "python$version" || true)")
for candidate in "${candidates[@]}"; do
  if [ -n "$candidate" ] && "$candidate" -c pass 2>/dev/null; then
    echo "$candidate"
    exit 0
  fi
done
echo "no working python$version on PATH or under $root/versions" >&2
exit 1
