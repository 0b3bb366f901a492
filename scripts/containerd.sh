# A private containerd 1.6 with its CRI plugin, for the runtime-cri suites: its own root, state,
# socket, runc root and CNI network, so it never meets the Docker engine's containerd, plus the
# test images (busybox on nothing, imported: these machines reach no registry).
#
#   source scripts/containerd.sh; start_containerd     # what scripts/test.sh does
#   bash scripts/containerd.sh start|stop|status|env   # by hand
#
# Settings this VM needs are measured in shared/TOOLCHAIN.md (restrict_oom_score_adj: root here
# lacks CAP_SYS_RESOURCE; cgroupfs: no systemd). Stopping removes what it added outside its folder
# too: the bridge, its CNI iptables rules, CNI result files, cgroups and shim sockets.

source "$(dirname "${BASH_SOURCE[0]}")/lib/engine.sh"

# Its folder and socket are in packages/testkit/scripts/engines.env.
CRI_DIR="$KUBELET_TS_CRI_DIR"
CRI_SOCK="$CRI_SOCKET"
CRI_LOG="$CRI_DIR.log"
CRI_NETWORK=kubelet-ts-cri
CRI_BRIDGE=kts-cri0
# A /22 that nothing else here uses (Docker has 172.17/16): room for 1,000 sandboxes, as the
# 200-pod steady-state bench beside the suites needs more than a /24 holds; no masquerade: pods
# reach nothing outside.
CRI_SUBNET="${KUBELET_TS_CRI_SUBNET:-10.231.64.0/22}"

cri_ctr() { as_root ctr --address "$CRI_SOCK" --namespace k8s.io "$@"; }

# containerd comes with docker.io (and is its own Debian package); the CNI plugins are not.
ensure_containerd_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v pgrep >/dev/null || missing+=(procps)
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/portmap ] && [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
  dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
  install_debs "${missing[@]}"
}

# Answers when containerd is up and its CRI plugin loaded (a bad CRI config leaves it "error").
# (Output read whole, not piped into grep -q: under pipefail an early grep exit would read as "down".)
containerd_answers() {
  local plugins
  [ -S "$CRI_SOCK" ] || return 1
  plugins="$(as_root ctr --address "$CRI_SOCK" plugins ls 2>/dev/null)" || return 1
  grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$' <<<"$plugins"
}

cri_write_config() {
  mkdir -p "$CRI_DIR/cni" "$CRI_DIR/cni-ipam" "$CRI_DIR/opt"
  cat >"$CRI_DIR/config.toml" <<EOF
version = 2
root = "$CRI_DIR/root"
state = "$CRI_DIR/state"
# The Docker engine's containerd keeps its own; none of ours may clash with it.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$CRI_SOCK"
[ttrpc]
  address = "$CRI_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$CRI_DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$TEST_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$CRI_DIR/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CRI_DIR/cni"
    max_conf_num = 1
EOF
  # containerd adds the loopback interface itself (its default lo network, from bin_dir).
  cat >"$CRI_DIR/cni/10-$CRI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CRI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CRI_BRIDGE",
      "isGateway": true,
      "isDefaultGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$CRI_DIR/cni-ipam", "ranges": [[{ "subnet": "$CRI_SUBNET" }]] }
    },
    { "type": "portmap", "capabilities": { "portMappings": true }, "snat": true }
  ]
}
EOF
}

# Starts the private containerd unless one answers at the socket, and loads the test images (again:
# a load of what it has adds nothing).
start_containerd() {
  ensure_containerd_packages
  engine_start containerd "$CRI_DIR/containerd.pid" "$CRI_LOG" cri_prepare containerd --config "$CRI_DIR/config.toml"
  engine_load_test_images cri_ctr images import
}

# What an instance that died (a killed run) left behind goes first: it starts from nothing.
cri_prepare() {
  teardown_containerd
  cri_write_config
}

# Ends every task of the instance, the instance, and what it left inside and outside its folder.
# Safe to run when nothing is there.
teardown_containerd() {
  local ids=() id pid
  if [ -S "$CRI_SOCK" ]; then
    mapfile -t ids < <(cri_ctr tasks ls -q 2>/dev/null)
    for id in "${ids[@]}"; do cri_ctr tasks kill --all --signal SIGKILL "$id" >/dev/null 2>&1 || true; done
    for id in "${ids[@]}"; do cri_ctr tasks delete --force "$id" >/dev/null 2>&1 || true; done
    mapfile -t -O "${#ids[@]}" ids < <(cri_ctr containers ls -q 2>/dev/null)
  fi
  # An instance that died says nothing: its folder still names its sandboxes and tasks.
  mapfile -t -O "${#ids[@]}" ids < <(ls "$CRI_DIR/root/io.containerd.grpc.v1.cri/sandboxes" "$CRI_DIR/state/io.containerd.runtime.v2.task/k8s.io" 2>/dev/null | grep -E '^[0-9a-f]{64}$')
  engine_kill "$(cat "$CRI_DIR/containerd.pid" 2>/dev/null)" "$CRI_DIR/config.toml"
  # Shims it started that outlived it (their command line names our socket), and their sockets,
  # which containerd names sha256(<address>/<namespace>/<id>) under /run/containerd/s.
  for pid in $(pgrep -f -- "-address $CRI_SOCK( |$)" || true); do as_root kill -9 "$pid" 2>/dev/null || true; done
  for id in "${ids[@]}"; do
    as_root rm -f "/run/containerd/s/$(printf '%s' "$CRI_SOCK/k8s.io/$id" | sha256sum | cut -d' ' -f1)" "/var/lib/cni/results/cni-loopback-$id-lo"
  done
  as_root rmdir /run/containerd/s /run/containerd 2>/dev/null || true
  cri_teardown_cgroups "${ids[@]}"
  engine_remove_dir "$CRI_DIR"
  cri_teardown_network
}

# Kills what is left in the cgroups of the suites' pods (and of any task it knew), then removes them.
cri_teardown_cgroups() {
  local dirs=() controller id dir
  for controller in /sys/fs/cgroup /sys/fs/cgroup/*; do
    [ -d "$controller$CRI_CGROUP_PARENT" ] && dirs+=("$controller$CRI_CGROUP_PARENT")
    for id in "$@"; do [ -d "$controller/k8s.io/$id" ] && dirs+=("$controller/k8s.io/$id"); done
  done
  [ "${#dirs[@]}" -gt 0 ] || return 0
  engine_kill_cgroups "${dirs[@]}"
  sleep 0.1
  for dir in "${dirs[@]}"; do find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null || true; done
}

# The bridge, the portmap plugin's rules for our network, and CNI's cached results for it.
cri_teardown_network() {
  if ip link show "$CRI_BRIDGE" >/dev/null 2>&1; then as_root ip link del "$CRI_BRIDGE"; fi
  as_root rm -f /var/lib/cni/results/"$CRI_NETWORK"-* 2>/dev/null || true
  command -v iptables >/dev/null || return 0
  # portmap tags every rule it adds with `name: "<network>"`; its per-pod chains are CNI-DN-*.
  local rules
  rules="$(as_root iptables -t nat -S 2>/dev/null | grep -F "name: \\\"$CRI_NETWORK\\\"" || true)"
  iptables_delete_rules nat <<<"$rules"
  # shellcheck disable=SC2046 # one chain name per word
  iptables_drop_chains nat $(grep -oE -- '-j CNI-DN-[0-9a-f]+' <<<"$rules" | cut -d' ' -f2 | sort -u)
  # The shared CNI-HOSTPORT-* chains go when no other CNI network has a rule in them.
  if as_root iptables -t nat -S CNI-HOSTPORT-DNAT >/dev/null 2>&1 && [ "$(as_root iptables -t nat -S CNI-HOSTPORT-DNAT | grep -c '^-A')" = 0 ] &&
    [ "$(as_root iptables -t nat -S CNI-HOSTPORT-SNAT 2>/dev/null | grep -c '^-A')" = 0 ]; then
    iptables_delete_rules nat < <(as_root iptables -t nat -S | grep -E '^-A (PREROUTING|OUTPUT|POSTROUTING) .*-j CNI-HOSTPORT-')
    iptables_drop_chains nat CNI-HOSTPORT-DNAT CNI-HOSTPORT-SNAT CNI-HOSTPORT-MASQ CNI-HOSTPORT-SETMARK
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    start) start_containerd ;;
    stop) engine_stop containerd ;;
    status) if containerd_answers; then echo "containerd (CRI) answers at unix://$CRI_SOCK"; else echo "no containerd at $CRI_SOCK"; exit 1; fi ;;
    env) echo "export KUBELET_TS_CRI_ENDPOINT=unix://$CRI_SOCK KUBELET_TS_CRI_CGROUP_PARENT=$CRI_CGROUP_PARENT" ;;
    *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
  esac
fi
