#!/usr/bin/env bash
# A local fleet of real systemd hosts for molecule, the README's main command
# and the benches: N systemd-nspawn containers (llf-host1, llf-host2, ...) booted
# from ONE cached Debian bookworm rootfs, each with its own overlay upper dir,
# reachable by ssh over its own veth pair. Traffic stays on this machine: every
# host gets a /30 of one private /24 (host side .4i+1, container side .4i+2), no
# gateway, no forwarding.
#
# Usage: scripts/fleet.sh up [N]     boot hosts 1..N (default 2), stop any above N,
#                                    write the inventory; idempotent
#        scripts/fleet.sh down       stop every host, remove upper dirs and veths
#        scripts/fleet.sh status     one line per host (pid, address, ssh, systemd)
#        scripts/fleet.sh inventory  print the inventory's path
#        scripts/fleet.sh hosts      print the fleet as JSON (name, address, groups, ssh key)
#        scripts/fleet.sh poweroff H power host H (a number or a name) off, keeping its disk
#        scripts/fleet.sh poweron H  boot host H again from its disk (what it ran starts again)
#        scripts/fleet.sh rootfs     build the shared rootfs if missing, print it
#
# Environment: LLAMAFLEET_CACHE (default ~/.cache/llamafleet; the rootfs lives in
# $LLAMAFLEET_CACHE/rootfs), LLAMAFLEET_FLEET_STATE (default
# $LLAMAFLEET_CACHE/fleet: pids, logs, upper dirs, ssh key, inventory),
# LLAMAFLEET_FLEET_NET (first three octets of the /24, default 10.213.47),
# LLAMAFLEET_FLEET_PREFIX (host name prefix, default llf-host; another prefix,
# state dir and net give a second, independent fleet),
# LLAMAFLEET_FLEET_SHARE (a directory bound read-only at /srv/llamafleet in every host),
# LLAMAFLEET_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# LLAMAFLEET_FLEET_TIMEOUT (seconds per host to reach systemd running + ssh, default 120).
#
# Why these nspawn flags (checked on a host without systemd as PID 1 and a
# cgroup v1 hybrid layout): --register=no because there is no machined to
# register with; --keep-unit because there is no systemd to create a scope;
# --network-veth for a private network namespace reachable only from here;
# --overlay so hosts share the read-only rootfs and write only their upper dir.
# Each host starts in its own cgroup (llamafleet/<name>, see launch_host), and
# sees a pure cgroup v2 tree (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1, the default
# here; 0 follows this machine's layout). cgroup limits (MemoryMax=, CPUQuota=)
# are accepted inside but not enforced: no controller is delegated.
set -euo pipefail

cache=${LLAMAFLEET_CACHE:-$HOME/.cache/llamafleet}
state=${LLAMAFLEET_FLEET_STATE:-$cache/fleet}
net=${LLAMAFLEET_FLEET_NET:-10.213.47}
mirror=${LLAMAFLEET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
boot_timeout=${LLAMAFLEET_FLEET_TIMEOUT:-120}
# The Debian release of the hosts: bookworm (Python 3.11) by default; trixie (Python 3.13) for the
# newer-target scenario (Makefile: molecule-trixie).
suite=${LLAMAFLEET_SUITE:-bookworm}
case "$suite" in bookworm|trixie) ;; *) echo "fleet: LLAMAFLEET_SUITE must be bookworm or trixie, not $suite" >&2; exit 2 ;; esac
name_prefix=${LLAMAFLEET_FLEET_PREFIX:-llf-host}
# Optional: a controller directory every host sees read-only at /srv/llamafleet
# (engine archive, wheels, model: file:// URLs without copying them per host).
share=${LLAMAFLEET_FLEET_SHARE:-}
max_hosts=62   # /30 blocks 1..62 of the /24 (.4..251)

# Everything the role, the module runtime and the engine need on a target. The
# recipe (this list, the suite, the post-install steps' version) keys the cache:
# changing any of it builds a new rootfs next to the old one.
recipe_version=1
packages=(
  systemd systemd-sysv dbus             # systemd as PID 1, systemctl, systemd-analyze
  python3 python3-venv                  # Ansible modules; the module runtime venv (ensurepip)
  python3-packaging                     # ansible.builtin.pip imports it on the target
  iproute2 procps                       # ss/ip for the port probe, ps/pgrep for verify
  openssh-server                        # the Ansible connection
  libgomp1                              # the CPU llama-server links libgomp
  curl ca-certificates                  # completions and health checks from the host itself
  tar gzip xz-utils unzip               # ansible.builtin.unarchive of engine archives
  acl                                   # Ansible become to unprivileged users (setfacl)
  haproxy lua-cjson                     # the fleet gateway (llama_gateway; disabled until the role enables it)
)

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

log() { echo "fleet: $*" >&2; }
die() { echo "fleet: error: $*" >&2; exit 1; }

recipe_hash() {
  { echo "$recipe_version $suite $(uname -m)"; printf '%s\n' "${packages[@]}"; } | sha256sum | cut -c1-12
}

rootfs_dir() { echo "$cache/rootfs/$suite-$(recipe_hash)"; }

need_tools() {
  local missing=() tool
  for tool in systemd-nspawn:systemd-container debootstrap:debootstrap ssh:openssh-client \
              ssh-keygen:openssh-client ip:iproute2; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    die "missing tools; install: ${missing[*]}"
  fi
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  local apt_log
  apt_log=$(new_log apt)
  log "installing ${missing[*]} (apt log: $apt_log)"
  # One apt run at a time (make artifacts builds both rootfs side by side).
  "$(dirname "$self")/apt_install.sh" --log "$apt_log" "${missing[@]}" \
    || die_with_log "apt-get could not install ${missing[*]}" "$apt_log"
}

# A new log file under $cache/logs for one tool run (apt, debootstrap): full
# output there, only its name and, on failure, its end on the terminal.
new_log() {
  mkdir -p "$cache/logs"
  echo "$cache/logs/$1-$(date +%Y%m%d-%H%M%S).log"
}

die_with_log() {
  die "$1; the end of its log:
$(tail -n 20 "$2")
fleet: full log: $2"
}

# debootstrap's few phase lines, and a count of the packages it fetched, from
# the hundreds it prints (all of them stay in its log).
debootstrap_progress() {
  awk '
    /^I: Retrieving / && !/^I: Retrieving (InRelease|Release|Packages)/ {
      if (++n % 25 == 0) { print "fleet: debootstrap: " n " packages retrieved"; fflush() }
      next
    }
    /^I: (Installing core|Unpacking required|Configuring required|Unpacking the base|Configuring the base|Base system installed)/ ||
    /^[EW]: / { print "fleet: debootstrap: " substr($0, 4); fflush() }
  '
}

# rm -rf that never descends into a mount (a failed debootstrap can leave
# its /proc or /sys mounted inside the tree).
remove_tree() {
  local dir=$1 mnt
  [ -e "$dir" ] || return 0
  while read -r mnt; do
    umount -l "$mnt" 2>/dev/null || true
  done < <(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
  rm -rf --one-file-system "$dir"
}

# Build the shared rootfs once per recipe: debootstrap into a temporary dir,
# configure what all hosts share, then rename (a present rootfs is complete).
build_rootfs() {
  local root tmp started include build_log
  root=$(rootfs_dir)
  if [ -f "$root/.llamafleet-complete" ]; then
    echo "$root"
    return 0
  fi
  need_tools
  mkdir -p "$cache/rootfs"
  # One builder at a time; a second one waits, then finds the rootfs done.
  exec 8>"$cache/rootfs/.lock"
  flock -w 1800 8 || die "another rootfs build holds $cache/rootfs/.lock for 30 min"
  if [ -f "$root/.llamafleet-complete" ]; then
    exec 8>&-
    echo "$root"
    return 0
  fi
  tmp=$(mktemp -d "$cache/rootfs/.$suite-build.XXXXXX")
  # shellcheck disable=SC2064  # expand now: the trap must remove this very dir
  trap "remove_tree '$tmp'" EXIT
  include=$(IFS=,; echo "${packages[*]}")
  started=$(date +%s)
  build_log=$(new_log "rootfs-$suite-$(recipe_hash)")
  log "debootstrap $suite into $tmp (packages: $include; log: $build_log)"
  if ! debootstrap --variant=minbase --include="$include" "$suite" "$tmp" "$mirror" 2>&1 \
       | tee "$build_log" | debootstrap_progress >&2; then
    die_with_log "debootstrap failed (is $mirror reachable?)" "$build_log"
  fi

  # Root logs in by key only (authorized_keys is per fleet, in each upper dir).
  mkdir -p "$tmp/etc/ssh/sshd_config.d"
  cat >"$tmp/etc/ssh/sshd_config.d/10-llamafleet.conf" <<'EOF'
# llamafleet test host: root by key only, no DNS lookups (nothing to ask).
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
EOF
  # Each host writes its own machine-id into its upper dir; the shared one stays
  # empty so a host booted without one gets a fresh id instead of a clone's.
  : >"$tmp/etc/machine-id"
  rm -f "$tmp/var/lib/dbus/machine-id"
  # Addresses come from systemd-networkd with a per-host .network file.
  systemctl --root="$tmp" enable systemd-networkd.service >>"$build_log" 2>&1 \
    || die_with_log "systemctl --root enable systemd-networkd failed" "$build_log"
  # The gateway role starts HAProxy where it is wanted; no host runs Debian's default configuration.
  systemctl --root="$tmp" disable haproxy.service >>"$build_log" 2>&1 \
    || die_with_log "systemctl --root disable haproxy failed" "$build_log"
  # Nothing to fetch inside the fleet: no apt timers, no package caches.
  systemctl --root="$tmp" mask apt-daily.timer apt-daily-upgrade.timer >>"$build_log" 2>&1 || true
  rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"*
  touch "$tmp/.llamafleet-complete"
  # An incomplete dir of this name is a dead build's; running hosts only ever
  # use complete ones (checked above under the lock).
  [ -e "$root" ] && remove_tree "$root"
  mv "$tmp" "$root"
  trap - EXIT
  exec 8>&-
  log "rootfs built in $(( $(date +%s) - started )) s: $root (log: $build_log)"
  echo "$root"
}

host_name() { echo "$name_prefix$1"; }
# Two halves for rollout tests: odd hosts in group_a, even hosts in group_b.
host_half() { if [ $(( $1 % 2 )) -eq 1 ]; then echo group_a; else echo group_b; fi; }
host_addr() { echo "$net.$(( 4 * $1 + 2 ))"; }
gw_addr() { echo "$net.$(( 4 * $1 + 1 ))"; }
veth_name() { echo "ve-$(host_name "$1")"; }
host_dir() { echo "$state/hosts/$(host_name "$1")"; }
ssh_key() { echo "$state/id_ed25519"; }
inventory_path() { echo "$state/inventory.ini"; }

ssh_opts() {
  printf '%s\n' -i "$(ssh_key)" -o BatchMode=yes -o ConnectTimeout=3 \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
}

host_ssh() {
  local i=$1; shift
  local opts
  mapfile -t opts < <(ssh_opts)
  # shellcheck disable=SC2029  # the command is meant to run on the host as given
  ssh "${opts[@]}" "root@$(host_addr "$i")" "$@"
}

# The pid recorded at boot, if it is still ours: the launcher (before its exec)
# or the systemd-nspawn it became, not a recycled pid.
host_pid() {
  local pidfile pid cmdline
  pidfile="$(host_dir "$1")/nspawn.pid"
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline")
  case "$cmdline" in
    "systemd-nspawn "*" -M $(host_name "$1") "*|*"$self _launch $1 "*) echo "$pid" ;;
    *) return 1 ;;
  esac
}

# While booting: the process we started is still there. (host_pid also checks
# its command line, which is briefly neither ours nor nspawn's while the
# launcher execs: fine for status and down, a false "exited" during boot.)
host_alive() {
  local pidfile
  pidfile="$(host_dir "$1")/nspawn.pid"
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# Per-host files go into the upper dir before the first boot: the overlay shows
# them on top of the shared rootfs.
prepare_upper() {
  local i=$1 upper
  upper="$(host_dir "$i")/upper"
  mkdir -p "$upper/etc/systemd/network" "$upper/root/.ssh"
  host_name "$i" >"$upper/etc/hostname"
  [ -s "$upper/etc/machine-id" ] || printf '%s\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >"$upper/etc/machine-id"
  cat >"$upper/etc/systemd/network/10-llamafleet-host0.network" <<EOF
# Static address on the veth to the controller, and a route to the other hosts
# through it (a gateway host reaches every engine); no default route: the fleet
# reaches nothing but this machine and itself.
[Match]
Name=host0

[Network]
Address=$(host_addr "$i")/30
LinkLocalAddressing=no
IPv6AcceptRA=no

[Route]
Destination=$net.0/24
Gateway=$(gw_addr "$i")
EOF
  chmod 0700 "$upper/root/.ssh"
  install -m 0600 "$(ssh_key).pub" "$upper/root/.ssh/authorized_keys"
}

ensure_key() {
  mkdir -p "$state"
  chmod 0700 "$state"
  [ -f "$(ssh_key)" ] || ssh-keygen -q -t ed25519 -N '' -C llamafleet-fleet -f "$(ssh_key)"
}

# The cgroup hierarchies systemd tracks processes in: the unified one (pure v2,
# or /sys/fs/cgroup/unified in a hybrid layout) and the v1 name=systemd one.
cgroup_hierarchies() {
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    echo /sys/fs/cgroup
    return 0
  fi
  [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] && echo /sys/fs/cgroup/unified
  [ -d /sys/fs/cgroup/systemd ] && echo /sys/fs/cgroup/systemd
  return 0
}

host_cgroup() { echo "llamafleet/$(host_name "$1")"; }

# Runs as the background process that becomes systemd-nspawn (same pid):
# joins the host's own cgroup first. With --keep-unit nspawn stays in the cgroup
# it was started in and puts the container in <that cgroup>/payload; started
# from one shared cgroup, two containers would share one payload cgroup and
# each one's systemd would see and kill the other's service processes.
launch_host() {
  local i=$1 root=$2 dir name hierarchy cg
  dir=$(host_dir "$i")
  name=$(host_name "$i")
  while read -r hierarchy; do
    cg="$hierarchy/$(host_cgroup "$i")"
    if ! { mkdir -p "$cg" && echo $$ >"$cg/cgroup.procs"; }; then
      die "$name: cannot join cgroup $cg (is /sys/fs/cgroup writable?)"
    fi
  done < <(cgroup_hierarchies)
  # Pure cgroup v2 inside every host, whatever the layout here (this machine is
  # v1 hybrid): hosts then look like today's real targets, the same here as on
  # a v2 CI machine. Set SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0 to follow the host.
  export SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=${SYSTEMD_NSPAWN_UNIFIED_HIERARCHY:-1}
  exec systemd-nspawn -q --register=no --keep-unit -M "$name" \
    -D "$root" --overlay="$root:$dir/upper:/" ${share:+--bind-ro="$share:/srv/llamafleet"} \
    --boot --network-veth --console=read-only
}

remove_cgroups() {
  local i=$1 hierarchy cg
  while read -r hierarchy; do
    cg="$hierarchy/$(host_cgroup "$i")"
    if [ -d "$cg" ] && ! find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null; then
      log "$(host_name "$i"): warning: cgroup $cg not empty, left in place"
    fi
    rmdir "$hierarchy/llamafleet" 2>/dev/null || true   # only once empty
  done < <(cgroup_hierarchies)
}

boot_host() {
  local i=$1 root=$2 dir name
  dir=$(host_dir "$i")
  name=$(host_name "$i")
  mkdir -p "$dir"
  prepare_upper "$i"
  echo "$share" >"$dir/share"
  # setsid + nohup: the container must outlive this script and its terminal.
  # 9>&-: the fleet lock must not live on in the container's process.
  setsid nohup "$self" _launch "$i" "$root" >"$dir/console.log" 2>&1 </dev/null 9>&- &
  echo $! >"$dir/nspawn.pid"
  log "$name: systemd-nspawn pid $!, address $(host_addr "$i")"
}

# nspawn creates ve-<name> on this side; give it the host side of the /30.
configure_veth() {
  local i=$1 veth deadline
  veth=$(veth_name "$i")
  deadline=$(( $(date +%s) + 30 ))
  until ip link show "$veth" >/dev/null 2>&1; do
    host_alive "$i" || die "$(host_name "$i"): systemd-nspawn exited; log: $(host_dir "$i")/console.log
$(tail -n 20 "$(host_dir "$i")/console.log")"
    [ "$(date +%s)" -lt "$deadline" ] || die "$(host_name "$i"): no $veth after 30 s"
    sleep 0.2
  done
  ip addr replace "$(gw_addr "$i")/30" dev "$veth"
  ip link set "$veth" up
  # The hosts reach each other through this machine (their route to the fleet's /24).
  echo 1 >/proc/sys/net/ipv4/ip_forward
}

wait_ready() {
  local i=$1 deadline out name
  name=$(host_name "$i")
  deadline=$(( $(date +%s) + boot_timeout ))
  until out=$(host_ssh "$i" systemctl is-system-running 2>/dev/null) \
        || [ "$out" = degraded ]; do
    host_alive "$i" || die "$name: systemd-nspawn exited; last console lines:
$(tail -n 20 "$(host_dir "$i")/console.log")"
    if [ "$(date +%s)" -ge "$deadline" ]; then
      die "$name: not ready after ${boot_timeout} s (ssh to $(host_addr "$i") / systemd state '${out:-no answer}'); console: $(host_dir "$i")/console.log"
    fi
    case "$out" in
      starting|initializing|"") sleep 0.5 ;;
      *) die "$name: systemd is '$out'" ;;
    esac
  done
  if [ "$out" = degraded ]; then
    log "$name: systemd degraded; failed units: $(host_ssh "$i" systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')"
  fi
}

stop_host() {
  local i=$1 keep_disk=${2:-} pid dir name veth
  dir=$(host_dir "$i")
  name=$(host_name "$i")
  veth=$(veth_name "$i")
  if pid=$(host_pid "$i"); then
    # nspawn turns SIGTERM into SIGRTMIN+3 for the container's systemd: an
    # orderly poweroff. SIGKILL only when it does not finish in time.
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$(( $(date +%s) + 30 ))
    while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name: no poweroff after 30 s, killing pid $pid"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
    fi
    log "$name: stopped"
  fi
  # The veth dies with the container's namespace; remove a leftover of ours only.
  if ip link show "$veth" >/dev/null 2>&1; then ip link delete "$veth" || true; fi
  remove_cgroups "$i"
  [ -n "$keep_disk" ] || remove_tree "$dir"
}

# A host's number from its number or name (llf-host2 -> 2), checked against the fleet that is up.
host_index() {
  local given=$1 n i
  [ -f "$state/size" ] || die "no fleet is up; run: scripts/fleet.sh up"
  n=$(cat "$state/size")
  i=${given#"$name_prefix"}
  if ! [[ "$i" =~ ^[0-9]+$ ]] || [ "$i" -lt 1 ] || [ "$i" -gt "$n" ]; then
    die "no host '$given' in the fleet of $n"
  fi
  echo "$i"
}

# A host that goes down and comes back with its disk, as a real machine does after a power cut: what it ran is
# still installed (enabled units start again at boot), unlike `up`, which gives a dead host a fresh disk.
cmd_poweroff() {
  local i
  i=$(host_index "$1")
  lock_fleet
  host_pid "$i" >/dev/null || die "$(host_name "$i") is not running"
  stop_host "$i" keep-disk
}

cmd_poweron() {
  local i root
  i=$(host_index "$1")
  [ "$(id -u)" -eq 0 ] || die "run as root (systemd-nspawn, veth)"
  share=$(cat "$(host_dir "$i")/share" 2>/dev/null || true)
  need_tools
  root=$(build_rootfs)
  lock_fleet
  host_pid "$i" >/dev/null && die "$(host_name "$i") is already running"
  [ -d "$(host_dir "$i")/upper" ] || die "$(host_name "$i") has no disk to boot from; run: scripts/fleet.sh up"
  boot_host "$i" "$root"
  configure_veth "$i"
  wait_ready "$i"
  log "$(host_name "$i"): back, with its disk"
}

write_inventory() {
  local n=$1 i inv tmp half
  inv=$(inventory_path)
  tmp="$inv.tmp"
  {
    echo "# Written by scripts/fleet.sh up $n: the local nspawn fleet."
    echo "[llama_fleet]"
    for i in $(seq 1 "$n"); do echo "$(host_name "$i") ansible_host=$(host_addr "$i")"; done
    echo
    echo "# Two halves for rollout tests: odd hosts in group_a, even hosts in group_b."
    for half in group_a group_b; do
      echo "[$half]"
      for i in $(seq 1 "$n"); do [ "$(host_half "$i")" = "$half" ] && host_name "$i"; done
      echo
    done
    echo "[llama_fleet:vars]"
    echo "ansible_user=root"
    echo "ansible_ssh_private_key_file=$(ssh_key)"
    # Every fleet is new hardware to ssh: no host key prompts, no known_hosts. Keep-alives bound a silent
    # partition: a host that stops answering fails after 3 unanswered probes 5 s apart, the others go on.
    echo "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" \
      "-o ServerAliveInterval=5 -o ServerAliveCountMax=3'"
    echo "ansible_python_interpreter=/usr/bin/python3"
    # Root over ssh, no sudo/requiretty: one ssh round trip per task.
    echo "ansible_pipelining=true"
  } >"$tmp"
  mv "$tmp" "$inv"
  echo "$n" >"$state/size"
}

# One fleet command at a time per state dir (up/down from two shells).
lock_fleet() {
  mkdir -p "$state"
  exec 9>"$state/.lock"
  flock -w 600 9 || die "another fleet.sh holds $state/.lock for 10 min"
}

cmd_up() {
  local n=${1:-2} root i started booted=()
  if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt "$max_hosts" ]; then
    die "host count must be 1..$max_hosts, got '$n'"
  fi
  [ "$(id -u)" -eq 0 ] || die "run as root (systemd-nspawn, veth)"
  if [ -n "$share" ]; then
    [ -d "$share" ] || die "LLAMAFLEET_FLEET_SHARE=$share is not a directory"
    share=$(cd "$share" && pwd -P)   # nspawn wants an absolute path
  fi
  need_tools
  root=$(build_rootfs)
  lock_fleet
  ensure_key
  started=$(date +%s)
  # Hosts above N from an earlier, larger fleet go away.
  for dir in "$state"/hosts/"$name_prefix"*; do
    [ -d "$dir" ] || continue
    i=${dir##*/"$name_prefix"}
    [[ "$i" =~ ^[0-9]+$ ]] && [ "$i" -gt "$n" ] && stop_host "$i"
  done
  for i in $(seq 1 "$n"); do
    if host_pid "$i" >/dev/null; then
      # A running host keeps its mounts: reboot it when the share changed.
      [ "$(cat "$(host_dir "$i")/share" 2>/dev/null)" = "$share" ] && continue
      log "$(host_name "$i"): share changed to '${share:-none}', rebooting"
    fi
    # A dead host's leftovers (upper dir, veth) must not leak into the new boot.
    stop_host "$i"
    booted+=("$i")
  done
  # Boot only once every stop is done: a stop removes the shared llamafleet
  # cgroup when it is empty, which races with an already booted host's
  # launcher creating its own cgroup under it (mkdir: No such file).
  for i in "${booted[@]}"; do
    boot_host "$i" "$root"
  done
  for i in $(seq 1 "$n"); do
    configure_veth "$i"
  done
  for i in $(seq 1 "$n"); do
    wait_ready "$i"
  done
  write_inventory "$n"
  log "fleet of $n up (${#booted[@]} booted) in $(( $(date +%s) - started )) s; inventory: $(inventory_path)"
}

cmd_down() {
  local dir i
  [ -d "$state" ] || { log "fleet down (no state)"; return 0; }
  lock_fleet
  for dir in "$state"/hosts/"$name_prefix"*; do
    [ -d "$dir" ] || continue
    i=${dir##*/"$name_prefix"}
    [[ "$i" =~ ^[0-9]+$ ]] && stop_host "$i"
  done
  rm -f "$(inventory_path)" "$state/size"
  log "fleet down"
}

cmd_status() {
  local dir i pid sys
  for dir in "$state"/hosts/"$name_prefix"*; do
    [ -d "$dir" ] || continue
    i=${dir##*/"$name_prefix"}
    [[ "$i" =~ ^[0-9]+$ ]] || continue
    if ! pid=$(host_pid "$i"); then
      echo "$(host_name "$i") stopped"
    elif ! ip link show "$(veth_name "$i")" >/dev/null 2>&1; then
      echo "$(host_name "$i") pid=$pid addr=$(host_addr "$i") veth=missing"
    else
      sys=$(host_ssh "$i" systemctl is-system-running 2>/dev/null) || true
      echo "$(host_name "$i") pid=$pid addr=$(host_addr "$i") systemd=${sys:-no-ssh-answer}"
    fi
  done
}

# One JSON document for tools (molecule's create playbook): the hosts of the
# fleet that is up, with their address, groups and the ssh key.
cmd_hosts() {
  local n i sep=""
  [ -f "$state/size" ] || die "no fleet is up; run: scripts/fleet.sh up"
  n=$(cat "$state/size")
  printf '{"ssh_key": "%s", "user": "root", "port": 22, "hosts": [' "$(ssh_key)"
  for i in $(seq 1 "$n"); do
    printf '%s{"name": "%s", "address": "%s", "groups": ["llama_fleet", "%s"]}' \
      "$sep" "$(host_name "$i")" "$(host_addr "$i")" "$(host_half "$i")"
    sep=", "
  done
  printf ']}\n'
}

cmd_inventory() {
  [ -f "$(inventory_path)" ] || die "no fleet inventory; run: scripts/fleet.sh up"
  inventory_path
}

case "${1:-}" in
  up) cmd_up "${2:-2}" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  inventory) cmd_inventory ;;
  hosts) cmd_hosts ;;
  poweroff) cmd_poweroff "${2:?usage: $0 poweroff HOST}" ;;
  poweron) cmd_poweron "${2:?usage: $0 poweron HOST}" ;;
  rootfs) build_rootfs ;;
  _launch) launch_host "$2" "$3" ;;   # internal: see boot_host
  *) echo "usage: $0 up [N] | down | status | inventory | hosts | poweroff HOST | poweron HOST | rootfs" >&2
     exit 2 ;;
esac
