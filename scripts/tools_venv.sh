#!/usr/bin/env bash
# The controller-side tools venv ($LLAMAFLEET_CACHE/tools-venv) that fetch_model.sh, tiny_model.sh and
# wheels.sh install their downloaders into: made once, under a lock so parallel callers (make artifacts) do
# not create it twice. Prints its python.
#
# Usage: scripts/tools_venv.sh   -> prints $LLAMAFLEET_CACHE/tools-venv/bin/python
set -euo pipefail
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
venv="$cache/tools-venv"
if ! [ -x "$venv/bin/python" ]; then
  mkdir -p "$cache"
  exec 7>"$cache/.tools-venv.lock"
  flock -w 600 7
  if ! [ -x "$venv/bin/python" ]; then
    python=$(command -v python3.11 || command -v python3)
    "$python" -m venv "$venv" >&2
  fi
fi
echo "$venv/bin/python"
