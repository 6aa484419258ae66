#!/usr/bin/env bash
# Every bench of bench/ once, at its smallest size: a smoke step of `make test` that checks each one still runs
# on today's code (benches do not rot), never its figures (those are measured on purpose, with their defaults).
# The benches that need hosts get a fleet of their own (scripts/fleet.sh under another name prefix, network and
# state directory), so that they never touch the molecule scenarios' hosts; it is taken down at the end.
# Environment: VENV (default .venv), LLAMAFLEET_CACHE.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"
py=${VENV:-$root/.venv}/bin/python
export LLAMAFLEET_CACHE=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
engine=$(scripts/build_engine.sh current)
model=$(scripts/fetch_model.sh)

run() {
  local started=$SECONDS
  echo "bench smoke: $*"
  "$@" > "$log" 2>&1 || { tail -n 40 "$log"; echo "bench smoke: FAILED: $*" >&2; exit 1; }
  echo "bench smoke: ran in $((SECONDS - started)) s"
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run "$py" bench/gguf_read.py "$model" --runs 1
# Its time limit guards against a pathological walk; on a busy CI machine only the memory limit is meaningful.
run "$py" bench/gguf_hostile.py --repeat 1 --max-seconds 30
run "$py" bench/fuzz_plan.py --examples 50 --jobs 1
run "$py" bench/fuzz_engine.py "$engine" "$model" --examples 50
run "$py" bench/module_plan.py "$engine" "$model" --runs 1
run "$py" bench/memory_estimate.py --engine-dir "$engine" --models tiny --contexts 2048 --slots 1
run "$py" bench/target_runtime.py --runs 1
run "$py" bench/placement.py --sizes 10 --deployments 30 --runs 1 --ilp-limit-s 10
run "$py" bench/fleet_ledger.py --sizes 100 --runs 1
run "$py" bench/fleet_scale.py --sizes 100 --runs 1

# The fleet benches, on two hosts of their own.
export LLAMAFLEET_FLEET_PREFIX=llf-bench LLAMAFLEET_FLEET_NET=10.213.53
export LLAMAFLEET_FLEET_STATE=$LLAMAFLEET_CACHE/fleet-bench
export LLAMAFLEET_FLEET_SHARE=$LLAMAFLEET_CACHE/fleet-share
export LLAMAFLEET_DEMO_KEY_FILE=$LLAMAFLEET_FLEET_STATE/demo-api-key
trap 'rm -f "$log"; scripts/fleet.sh down > /dev/null 2>&1 || true' EXIT
run "$py" bench/reconverge.py --sizes 2 --runs 1
run "$py" bench/rollout_under_load.py --hosts 2 --steady-s 5 --skip-extras --surge 0,100%
run "$py" bench/router_change.py --rounds 1 --clients 1
