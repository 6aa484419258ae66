#!/usr/bin/env bash
# Install Debian packages for the build and test scripts, one apt run at a time: `make artifacts` starts the
# engine builds and both rootfs builds side by side, and two apt-get runs at once fail on apt's own lock.
# Waits for the other caller (a lock under $LLAMAFLEET_CACHE), then installs only what is still missing;
# apt's own lock is waited for too, should something else on the machine hold it.
#
# Usage: scripts/apt_install.sh [--log FILE] [--no-recommends] PACKAGE...
#        as root; apt's output goes to FILE (appended), or to stderr
set -euo pipefail
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
log=/dev/stderr
recommends=()
while [ $# -gt 0 ]; do
  case $1 in
    --log) log=$2; shift 2 ;;
    --no-recommends) recommends=(--no-install-recommends); shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: scripts/apt_install.sh [--log FILE] [--no-recommends] PACKAGE..." >&2; exit 2; }
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "missing packages; install them: $*" >&2
  exit 1
fi
mkdir -p "$cache"
exec 8>"$cache/.apt.lock"
flock -w 1800 8 || { echo "another install held $cache/.apt.lock for 30 minutes" >&2; exit 1; }

missing=()
for package in "$@"; do
  dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null | grep -qx installed || missing+=("$package")
done
[ ${#missing[@]} -gt 0 ] || exit 0
wait_lock=(-o DPkg::Lock::Timeout=600)
{
  apt-get "${wait_lock[@]}" update -q &&
    DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -q "${recommends[@]}" "${missing[@]}"
} >>"$log" 2>&1
