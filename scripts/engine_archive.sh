#!/usr/bin/env bash
# Pack a locally built llama-server (CPU or CUDA) into a release-like archive, so the
# role installs it the way it installs a real release (get_url with checksum +
# unarchive), here from a file:// URL.
#
# Usage: scripts/engine_archive.sh [ENGINE_BIN_DIR]
#   ENGINE_BIN_DIR  the directory scripts/build_engine.sh prints (default: build
#                   or reuse the current generation)
# Prints: <archive path> sha256:<hex>
#
# The archive is llama-server-<version>-linux-<arch>-<cpu|cuda>.tar.gz with one top
# directory llama-server-<version>/ holding bin/llama-server (and bin/llama-fit-params) and its .so files
# (the binary's RUNPATH is $ORIGIN). <version> is b<build>, as llama.cpp tags its
# releases. The archive is byte-reproducible (sorted names, fixed owner and
# mtime, gzip -n): repacking the same build gives the same checksum, so a
# re-converge sees no change.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
bin_dir=${1:-$("$here/build_engine.sh" current)}
engine="$bin_dir/llama-server"
[ -x "$engine" ] || { echo "no llama-server in $bin_dir" >&2; exit 1; }

# "version: 0.6.0-dev (build 11434, commit unknown)" -> b11434
build=$("$engine" --version 2>&1 | sed -n 's/.*(build \([0-9][0-9]*\).*/\1/p' | head -n1)
if [ -z "$build" ] || [ "$build" = 0 ]; then
  echo "cannot read the build number from $engine --version" >&2
  exit 1
fi
version="b$build"
name="llama-server-$version"
# Keyed by the engine build dir (its name carries the CPU key of a -march=native build).
out_dir="$cache/archives/$(basename "$(dirname "$bin_dir")")"
# The flavour names what the engine needs on a host: a CUDA build (scripts/build_engine.sh cuda) carries
# libggml-cuda and needs the NVIDIA driver and CUDA runtime there; a CPU build needs neither.
flavour=cpu
if compgen -G "$bin_dir/libggml-cuda.so*" >/dev/null; then flavour=cuda; fi
archive="$out_dir/$name-linux-$(uname -m)-$flavour.tar.gz"

if ! [ -f "$archive" ] || [ "$engine" -nt "$archive" ]; then
  mkdir -p "$out_dir"
  stage=$(mktemp -d "$out_dir/.stage.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/$name/bin"
  cp -a "$engine" "$bin_dir"/*.so* "$stage/$name/bin/"
  # The engine's own memory estimator travels with it: the placement's last check runs it on the host.
  if [ -x "$bin_dir/llama-fit-params" ]; then cp -a "$bin_dir/llama-fit-params" "$stage/$name/bin/"; fi
  mtime=$(stat -c %Y "$engine")
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
    -C "$stage" -cf - "$name" | gzip -n -9 >"$stage/archive.tar.gz"
  mv -f "$stage/archive.tar.gz" "$archive"
fi
echo "$archive sha256:$(sha256sum "$archive" | cut -d' ' -f1)"
