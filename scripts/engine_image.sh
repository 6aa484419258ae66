#!/usr/bin/env bash
# A Docker image of the locally built CPU llama-server, made without any
# registry: this machine reaches no image registry, so instead of FROM a base
# image we pack a minimal root filesystem by hand and `docker import` it.
#
# Usage: scripts/engine_image.sh [ENGINE_DIR]   -> prints the image tag
#   ENGINE_DIR  the directory scripts/build_engine.sh prints (default: build or
#               reuse the current generation)
#
# The image looks like ggml-org's official llama.cpp server images where the
# role cares: the binary is /app/llama-server, ENTRYPOINT ["/app/llama-server"],
# WORKDIR /app, ENV LLAMA_ARG_HOST=0.0.0.0, and /usr/bin/curl is there for a
# healthcheck. Its rootfs holds the engine directory at /app (llama-server and
# its .so files, found through RUNPATH $ORIGIN), the shared-library closure of
# llama-server and curl taken from this machine with ldd, the dynamic loader, a
# minimal /etc (passwd and group with root and nobody) and /tmp (1777). No shell.
#
# The tag is llamafleet/llama-server:cpu-<engine key>-r<recipe>: the engine
# directory's name already carries the version and the CPU key of a
# -march=native build (such an image only runs on this kind of CPU), and the
# recipe number below changes whenever the rootfs layout here changes. An image
# of that tag is reused; the rootfs tar is cached in $LLAMAFLEET_CACHE/images.
#
# The Docker engine: $DOCKER_HOST when set, else the private engine of
# scripts/docker_engine.sh (which must be up). Progress goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
recipe=2
repository=llamafleet/llama-server

log() { echo "engine-image: $*" >&2; }
die() { echo "engine-image: error: $*" >&2; exit 1; }

engine_dir=$(cd "${1:-$("$here/build_engine.sh" current)}" && pwd)
engine="$engine_dir/llama-server"
[ -x "$engine" ] || die "no llama-server in $engine_dir"

if [ -z "${DOCKER_HOST:-}" ]; then
  env_lines=$("$here/docker_engine.sh" env) || die "no DOCKER_HOST and no private engine; run: scripts/docker_engine.sh up"
  eval "$env_lines"
fi
docker info >/dev/null 2>&1 || die "no Docker engine answers at ${DOCKER_HOST}; run: scripts/docker_engine.sh up"

# build_engine.sh prints <cache>/engines/<pkg>-<version>-<cpu key>/bin: the key
# is the name above bin/. Tags allow [A-Za-z0-9_.-], at most 128 characters.
key=$(basename "$engine_dir")
[ "$key" = bin ] && key=$(basename "$(dirname "$engine_dir")")
key=$(printf '%s' "$key" | tr -c 'A-Za-z0-9_.-' '-')
tag="$repository:$(printf 'cpu-%s-r%s' "$key" "$recipe" | cut -c1-128)"

if docker image inspect "$tag" >/dev/null 2>&1; then
  log "$tag present"
  echo "$tag"
  exit 0
fi

if ! command -v curl >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    die "curl missing; install Debian's curl"
  fi
  log "installing curl"
  "$here/apt_install.sh" --no-recommends curl
fi
curl_bin=$(readlink -f "$(command -v curl)")

images="$cache/images"
tarball="$images/${tag##*:}.tar"
started=$(date +%s)

# The shared libraries a binary loads, with the path ldd resolved each to, and
# the dynamic loader (ldd prints it without "=>"). linux-vdso has no file.
lib_closure() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
}

build_rootfs() {
  local stage=$1 dir lib
  # Keep this machine's merged-/usr links (bin -> usr/bin, lib64 -> usr/lib64):
  # binaries ask for the loader by its full path (/lib64/ld-linux-x86-64.so.2).
  for dir in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$dir" ]; then
      mkdir -p "$stage/$(readlink "/$dir")"
      ln -s "$(readlink "/$dir")" "$stage/$dir"
    fi
  done
  mkdir -p "$stage/app" "$stage/etc" "$stage/tmp" "$stage/root" "$stage/usr/bin" \
    "$stage/proc" "$stage/sys" "$stage/dev"
  chmod 1777 "$stage/tmp"
  # 0755, not Debian's 0700: a model bind-mounted at its host path under /root
  # (e.g. ~/.cache) must stay reachable for a non-root --user.
  chmod 0755 "$stage/root"
  cp -a "$engine_dir/." "$stage/app/"
  cp -L "$curl_bin" "$stage/usr/bin/curl"
  # Libraries the engine finds in its own directory come with /app.
  while read -r lib; do
    case "$lib" in "$engine_dir"/*) continue ;; esac
    mkdir -p "$stage$(dirname "$lib")"
    [ -e "$stage$lib" ] || cp -L "$lib" "$stage$lib"
  done < <({ lib_closure "$engine"; lib_closure "$curl_bin"; } | sort -u)
  printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' \
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' >"$stage/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$stage/etc/group"
  # Docker bind-mounts its own hosts, hostname and resolv.conf over these.
  printf '%s\n' '127.0.0.1 localhost' '::1 localhost ip6-localhost ip6-loopback' >"$stage/etc/hosts"
  : >"$stage/etc/hostname"
  : >"$stage/etc/resolv.conf"
  # The loader's cache: libraries are found without a search of trusted dirs.
  ldconfig -r "$stage" 2>/dev/null || true
}

if ! [ -f "$tarball" ]; then
  mkdir -p "$images"
  stage=$(mktemp -d "$images/.stage.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  log "building the rootfs of $engine_dir"
  build_rootfs "$stage/rootfs"
  # Sorted names, fixed owner and mtime: the same inputs give the same tar.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$(stat -c %Y "$engine")" \
    -C "$stage/rootfs" -cf "$stage/rootfs.tar" .
  mv -f "$stage/rootfs.tar" "$tarball"
  rm -rf "$stage"
  trap - EXIT
fi

version=$("$engine" --version 2>&1 | grep -m1 '^version' || true)
log "importing $tarball ($(du -h "$tarball" | cut -f1)) as $tag"
docker import \
  --change 'ENTRYPOINT ["/app/llama-server"]' \
  --change 'WORKDIR /app' \
  --change 'ENV LLAMA_ARG_HOST=0.0.0.0' \
  --change "LABEL org.opencontainers.image.title=llama-server org.opencontainers.image.version=\"${version#version: }\" io.llamafleet.engine-dir=\"$engine_dir\" io.llamafleet.recipe=$recipe" \
  --message "llamafleet: rootfs of $engine_dir (recipe $recipe)" \
  "$tarball" "$tag" >/dev/null
log "$tag imported in $(( $(date +%s) - started )) s, $(docker image inspect --format '{{.Size}}' "$tag" | numfmt --to=iec) uncompressed"
echo "$tag"
