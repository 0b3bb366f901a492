# A private Podman 4.3 service with its Docker-compatible API, for the Docker adapter's Podman
# suites: its own root, runroot, tmpdir, network config, containers.conf and storage.conf, its own
# bridge and subnet, file locks and a file event log, so that it never meets the Docker engine, the
# private containerd or another Podman on the machine; plus the test images (busybox on nothing,
# imported: these machines reach no registry).
#
#   source scripts/podman.sh; start_podman         # what scripts/test.sh does
#   bash scripts/podman.sh start|stop|status|env   # by hand
#
# Settings this VM needs are measured in shared/TOOLCHAIN.md (default_ulimits: root here lacks
# CAP_SYS_RESOURCE, so the default nofile of 1048576 fails with EPERM; cgroupfs: no systemd).
# Stopping removes what it added outside its folder too: the bridge and netavark's iptables rules
# for it, conmon processes, network-namespace files, and cgroups.

source "$(dirname "${BASH_SOURCE[0]}")/lib/engine.sh"

# Its folder and socket are in packages/testkit/scripts/engines.env.
PM_DIR="$KUBELET_TS_PODMAN_DIR"
PM_SOCK="$PODMAN_SOCKET"
PM_LOG="$PM_DIR.log"
# The service's default network, a file of its own (not Podman's built-in `podman`/podman0), so
# that it meets no other Podman here; no DNS (aardvark-dns would bind port 53 on the gateway).
PM_NETWORK=kubelet-ts-podman
PM_BRIDGE=kts-podman0
# A /24 that nothing else here uses (Docker 172.17/16, the private containerd 10.231.64/22).
PM_SUBNET="${KUBELET_TS_PODMAN_SUBNET:-10.231.80.0/24}"

# The podman command line of this instance: every path of its own, runc's state included.
pm_podman_argv() {
  PM_ARGV=(env CONTAINERS_CONF="$PM_DIR/containers.conf" CONTAINERS_STORAGE_CONF="$PM_DIR/storage.conf"
    CONTAINERS_REGISTRIES_CONF="$PM_DIR/registries.conf"
    podman --root "$PM_DIR/root" --runroot "$PM_DIR/run" --tmpdir "$PM_DIR/tmp" --network-config-dir "$PM_DIR/networks"
    --cgroup-manager cgroupfs --events-backend file --runtime-flag "root=$PM_DIR/runtime")
}

# A client of the running service (what the suites talk to).
pm_remote() { as_root podman --remote --url "unix://$PM_SOCK" "$@"; }

# Debian's podman 4.3 pulls conmon and runc (already there with docker.io) but not the netavark
# network stack: containers-common accepts the CNI plugins instead, which we do not use here.
ensure_podman_packages() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  [ -x /usr/lib/podman/netavark ] || missing+=(netavark)
  command -v runc >/dev/null || command -v crun >/dev/null || missing+=(runc)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v pgrep >/dev/null || missing+=(procps)
  command -v curl >/dev/null || missing+=(curl)
  dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
  install_debs "${missing[@]}"
}

# Answers when the service serves its Docker API at the socket.
podman_answers() {
  [ -S "$PM_SOCK" ] || return 1
  [ "$(curl -fsS --max-time 2 --unix-socket "$PM_SOCK" http://d/_ping 2>/dev/null)" = OK ]
}

pm_write_config() {
  mkdir -p "$PM_DIR/root" "$PM_DIR/run" "$PM_DIR/tmp" "$PM_DIR/networks"
  local runtime=runc
  command -v runc >/dev/null || runtime=crun
  cat >"$PM_DIR/containers.conf" <<EOF
[containers]
# The default nofile of 1048576 fails with EPERM here (root lacks CAP_SYS_RESOURCE).
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$PM_DIR/events.log"
runtime = "$runtime"
tmp_dir = "$PM_DIR/tmp"
static_dir = "$PM_DIR/root/libpod"
volume_path = "$PM_DIR/root/volumes"
image_copy_tmp_dir = "storage"
# Locks as files in tmp_dir: the default shm segment /dev/shm/libpod_lock is shared by every rootful Podman.
lock_type = "file"

[network]
network_backend = "netavark"
network_config_dir = "$PM_DIR/networks"
default_network = "$PM_NETWORK"
default_subnet = "$PM_SUBNET"
EOF
  cat >"$PM_DIR/storage.conf" <<EOF
[storage]
driver = "overlay"
runroot = "$PM_DIR/run"
graphroot = "$PM_DIR/root"
EOF
  # No registry is searched for short names: nothing here reaches one. The suites' image that
  # exists nowhere names localhost:1, blocked here so that Podman refuses it at once rather than
  # retrying the refused connection for 3 s.
  # The testkit's RegistryServer serves plain HTTP on a free port of 127.0.0.1: Docker and
  # containerd take a loopback registry as insecure by themselves, Podman only where this file
  # says so. A location without a port matches every port of its host in containers/image (Podman
  # 4.3's), so the one entry covers every test's registry and no file outside this folder changes.
  cat >"$PM_DIR/registries.conf" <<EOF
unqualified-search-registries = []

[[registry]]
location = "localhost:1"
blocked = true

[[registry]]
location = "127.0.0.1"
insecure = true
EOF
  # The default network as a file: its bridge gets our name (the built-in one would be podman0).
  local gateway="${PM_SUBNET%.*}.1"
  cat >"$PM_DIR/networks/$PM_NETWORK.json" <<EOF
{
  "name": "$PM_NETWORK",
  "id": "$(printf '%s' "$PM_NETWORK" | sha256sum | cut -d' ' -f1)",
  "driver": "bridge",
  "network_interface": "$PM_BRIDGE",
  "created": "2026-01-01T00:00:00Z",
  "subnets": [{ "subnet": "$PM_SUBNET", "gateway": "$gateway" }],
  "ipv6_enabled": false,
  "internal": false,
  "dns_enabled": false,
  "ipam_options": { "driver": "host-local" }
}
EOF
}

# Starts the private service unless one answers at the socket, and loads the test images (again: a
# load of what it has adds nothing).
start_podman() {
  ensure_podman_packages
  pm_podman_argv
  # Its own session also keeps the conmons it starts out of the caller's signals.
  engine_start podman "$PM_DIR/podman.pid" "$PM_LOG" pm_prepare "${PM_ARGV[@]}" system service --time=0 "unix://$PM_SOCK"
  engine_load_test_images pm_remote load --quiet --input
}

# What an instance that died (a killed run) left behind goes first: it starts from nothing.
pm_prepare() {
  teardown_podman
  pm_write_config
  # Rootful Podman keeps some state at fixed paths whatever its root (netavark's IPAM database in
  # /run/containers/networks, network-namespace files in /run/netns, the blob-info cache in
  # /var/lib/containers): note which of them this instance makes, for teardown to remove.
  local path
  for path in /run/containers /run/netns /run/runc /var/lib/containers; do [ -e "$path" ] || echo "$path" >>"$PM_DIR/made-paths"; done
}

# Ends every container of the instance, the service, and what it left inside and outside its
# folder. Safe to run when nothing is there, and after an instance that died (its folder still
# names its containers).
teardown_podman() {
  local pid ids=()
  # Removing the containers through the service tears their networks down (rules, veths, netns).
  if podman_answers; then pm_remote rm --all --force --time 0 >/dev/null 2>&1 || true; fi
  # The service (by its pid file, and any other instance on this folder that lost it).
  local pids=()
  if [ -f "$PM_DIR/podman.pid" ]; then pids+=("$(cat "$PM_DIR/podman.pid")"); fi
  mapfile -t -O "${#pids[@]}" pids < <(pgrep -f -- "^podman --root $PM_DIR/root .* system service" || true)
  for pid in "${pids[@]}"; do engine_kill "$pid" "$PM_DIR/root"; done
  # conmons it started name our folder (an exec session's conmon outlives it by exit_command_delay).
  for pid in $(pgrep -f -- "^/usr/bin/conmon .*$PM_DIR/" || true); do as_root kill -9 "$pid" 2>/dev/null || true; done
  mapfile -t ids < <(ls "$PM_DIR/root/overlay-containers" 2>/dev/null | grep -E '^[0-9a-f]{64}$')
  pm_teardown_cgroups "${ids[@]}"
  pm_teardown_netns
  pm_teardown_network
  # The fixed paths it made (only those: another Podman here would share them).
  local path
  if [ -f "$PM_DIR/made-paths" ]; then
    while read -r path; do
      case "$path" in
        /run/runc) as_root rmdir /run/runc 2>/dev/null || true ;;
        # Podman makes /run/netns a mount point of its own (as `ip netns` does).
        /run/netns) if [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then as_root umount /run/netns 2>/dev/null || true; as_root rmdir /run/netns 2>/dev/null || true; fi ;;
        /run/containers | /var/lib/containers) as_root rm -rf --one-file-system "$path" ;;
      esac
    done <"$PM_DIR/made-paths"
  fi
  engine_remove_dir "$PM_DIR"
}

# Kills what is left in the cgroups of its containers (cgroupfs puts them, and conmon, under
# /libpod_parent), then removes the empty container cgroups there: runc leaves some behind after a
# forced removal, and an empty one is nobody's loss (a container started again gets a new one).
# /libpod_parent itself goes when nothing else is in it.
pm_teardown_cgroups() {
  local controller id dir dirs=()
  for controller in /sys/fs/cgroup /sys/fs/cgroup/*; do
    [ -d "$controller/libpod_parent" ] || continue
    for id in "$@"; do dirs+=("$controller/libpod_parent/libpod-$id" "$controller/libpod_parent/libpod-conmon-$id"); done
  done
  engine_kill_cgroups "${dirs[@]}"
  [ "$#" -eq 0 ] || sleep 0.1
  for controller in /sys/fs/cgroup /sys/fs/cgroup/*; do
    [ -d "$controller/libpod_parent" ] || continue
    for dir in "$controller"/libpod_parent/libpod-*; do
      [ -d "$dir" ] && as_root rmdir "$dir" 2>/dev/null || true
    done
    as_root rmdir "$controller/libpod_parent/conmon" "$controller/libpod_parent" 2>/dev/null || true
  done
}

# Network namespaces an instance that died left in /run/netns: ours hold an address of our subnet.
pm_teardown_netns() {
  local ns prefix="${PM_SUBNET%.*}."
  for ns in /run/netns/netns-*; do
    [ -e "$ns" ] || continue
    if as_root nsenter --net="$ns" ip -4 -o addr show 2>/dev/null | grep -qF " inet $prefix"; then
      as_root umount "$ns" 2>/dev/null || true
      as_root rm -f "$ns"
    fi
  done
}

# The bridge, and netavark's iptables rules for our network: its two chains (netavark names them
# after the first 13 hex digits of the SHA-512 of the network's name), the jumps to them and the
# rules naming our subnet or network elsewhere; then netavark's shared chains once no other
# network has a rule in them.
pm_teardown_network() {
  if ip link show "$PM_BRIDGE" >/dev/null 2>&1; then as_root ip link del "$PM_BRIDGE"; fi
  command -v iptables >/dev/null || return 0
  local hash table
  hash="$(printf '%s' "$PM_NETWORK" | sha512sum | cut -c1-13 | tr a-f A-F)"
  for table in nat filter; do
    iptables_delete_rules "$table" < <(as_root iptables -t "$table" -S 2>/dev/null | grep -E '^-A ' | grep -vE "^-A NETAVARK-(DN-)?$hash " |
      grep -E -e "-j NETAVARK-(DN-)?$hash( |\$)" -e " ${PM_SUBNET//./\\.} " -e "name: $PM_NETWORK id:")
    iptables_drop_chains "$table" "NETAVARK-DN-$hash" "NETAVARK-$hash"
  done
  # netavark's shared chains and the jumps to them, when they hold nothing of any other network.
  if [ "$(as_root iptables -t nat -S NETAVARK-HOSTPORT-DNAT 2>/dev/null | grep -c '^-A')" = 0 ] &&
    [ "$(as_root iptables -t filter -S NETAVARK_FORWARD 2>/dev/null | grep -c '^-A')" = 0 ] &&
    ! as_root iptables -t nat -S POSTROUTING 2>/dev/null | grep -qE -- '-j NETAVARK-[0-9A-F]+'; then
    for table in nat filter; do
      iptables_delete_rules "$table" < <(as_root iptables -t "$table" -S 2>/dev/null | grep -E '^-A (PREROUTING|OUTPUT|POSTROUTING|FORWARD) .*-j NETAVARK(-HOSTPORT-[A-Z]+|_FORWARD)( |$)')
      iptables_drop_chains "$table" NETAVARK-HOSTPORT-DNAT NETAVARK-HOSTPORT-SETMARK NETAVARK-HOSTPORT-MASQ NETAVARK_FORWARD
    done
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    start) start_podman ;;
    stop) engine_stop podman ;;
    status) if podman_answers; then echo "podman answers at unix://$PM_SOCK"; else echo "no podman at $PM_SOCK"; exit 1; fi ;;
    env) echo "export KUBELET_TS_PODMAN_HOST=unix://$PM_SOCK" ;;
    *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
  esac
fi
