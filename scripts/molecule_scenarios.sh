#!/usr/bin/env bash
# Run molecule scenarios one at a time and say how long each took: the per-scenario times make test prints.
#
# Usage: scripts/molecule_scenarios.sh [--exclude NAME]... [NAME...]
#   Without NAMEs, every scenario under molecule/ (but molecule/shared and the excluded ones), in name order.
# Environment: MOLECULE (the molecule command, default molecule from PATH). Stops at the first failing scenario.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
molecule=${MOLECULE:-molecule}
exclude=()
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --exclude) exclude+=("$2"); shift 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
if [ ${#names[@]} -eq 0 ]; then
  for file in "$root"/molecule/*/molecule.yml; do
    names+=("$(basename "$(dirname "$file")")")
  done
fi
total=$SECONDS
ran=0
for name in "${names[@]}"; do
  for skip in "${exclude[@]+"${exclude[@]}"}"; do
    [ "$name" = "$skip" ] && continue 2
  done
  started=$SECONDS
  echo "molecule scenario $name: starting"
  if ! (cd "$root" && "$molecule" test -s "$name"); then
    echo "molecule scenario $name: FAILED after $((SECONDS - started)) s"
    exit 1
  fi
  echo "molecule scenario $name: passed in $((SECONDS - started)) s"
  ran=$((ran + 1))
done
echo "molecule: $ran scenario(s) passed in $((SECONDS - total)) s"
