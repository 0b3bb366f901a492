# A private containerd 1.6 with its CRI plugin, for the runtime-cri suites: its own root, state,
# socket, runc root and CNI network, so it never meets the Docker engine's containerd, plus the
# test images (busybox on nothing, imported: these machines reach no registry).
#
#   source scripts/containerd.sh; ensure_containerd   # what scripts/test.sh does
#   bash scripts/containerd.sh start|stop|status|env  # by hand
#
# Settings this VM needs are measured in shared/TOOLCHAIN.md (restrict_oom_score_adj: root here
# lacks CAP_SYS_RESOURCE; cgroupfs: no systemd). Stopping removes what it added outside its folder
# too: the bridge, its CNI iptables rules, CNI result files, cgroups and shim sockets.

CRI_DIR="${KUBELET_TS_CRI_DIR:-${KUBELET_TS_STATE_DIR:-/tmp/kubelet-ts-services}/containerd}"
CRI_SOCK="$CRI_DIR/containerd.sock"
CRI_LOG="$CRI_DIR.log"
# Present when ensure_containerd started the instance: `stop-if-started` stops only that one.
CRI_STARTED="$CRI_DIR.started"
CRI_NETWORK=kubelet-ts-cri
CRI_BRIDGE=kts-cri0
# A /22 that nothing else here uses (Docker has 172.17/16): room for 1,000 sandboxes, as the
# 200-pod steady-state bench beside the suites needs more than a /24 holds; no masquerade: pods
# reach nothing outside.
CRI_SUBNET="${KUBELET_TS_CRI_SUBNET:-10.231.64.0/22}"
# Pods of the suites live under this cgroup parent (cgroupfs), so that teardown finds them.
CRI_CGROUP_PARENT="${KUBELET_TS_CRI_CGROUP_PARENT:-/kubelet-ts-cri}"
# The names of @kubelet-ts/testkit's TEST_IMAGES, as containerd spells them.
CRI_BUSYBOX_IMAGE=docker.io/kubelet-ts-test/busybox:1
CRI_PAUSE_IMAGE=docker.io/kubelet-ts-test/pause:1

cri_as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root (or sudo) to run: $*" >&2; return 1
  fi
}

cri_ctr() { cri_as_root ctr --address "$CRI_SOCK" --namespace k8s.io "$@"; }

# containerd comes with docker.io (and is its own Debian package); the CNI plugins are not.
ensure_containerd_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v pgrep >/dev/null || missing+=(procps)
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/portmap ] && [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
  dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "== installing ${missing[*]} (Debian packages)"
    cri_as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive cri_as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Answers when containerd is up and its CRI plugin loaded (a bad CRI config leaves it "error").
# (Output read whole, not piped into grep -q: under pipefail an early grep exit would read as "down".)
cri_answers() {
  local plugins
  [ -S "$CRI_SOCK" ] || return 1
  plugins="$(cri_as_root ctr --address "$CRI_SOCK" plugins ls 2>/dev/null)" || return 1
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
  sandbox_image = "$CRI_PAUSE_IMAGE"
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
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$CRI_DIR/cni-ipam", "ranges": [[{ "subnet": "$CRI_SUBNET" }]] }
    },
    { "type": "portmap", "capabilities": { "portMappings": true }, "snat": true }
  ]
}
EOF
}

# One OCI layout holding both test images (they share their one layer), imported with ctr.
cri_import_images() {
  local present
  present="$(cri_ctr images ls -q 2>/dev/null || true)"
  if grep -qx "$CRI_BUSYBOX_IMAGE" <<<"$present" && grep -qx "$CRI_PAUSE_IMAGE" <<<"$present"; then return; fi
  local busybox="${KUBELET_TS_BUSYBOX:-/bin/busybox}" work arch layer diff_id
  work="$(mktemp -d)"
  arch="$(dpkg --print-architecture)"
  mkdir -p "$work/rootfs/bin" "$work/oci/blobs/sha256"
  cp "$busybox" "$work/rootfs/bin/busybox"
  for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$work/rootfs/bin/$applet"
  done
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/rootfs" -cf "$work/layer.tar" .
  diff_id="$(sha256sum <"$work/layer.tar" | cut -d' ' -f1)"
  gzip -n -c "$work/layer.tar" >"$work/layer.tar.gz"
  layer="$(cri_blob "$work" "$work/layer.tar.gz")"
  local layer_size manifests=""
  layer_size="$(stat -c %s "$work/layer.tar.gz")"
  local name config_json config manifest
  for name in "$CRI_BUSYBOX_IMAGE" "$CRI_PAUSE_IMAGE"; do
    if [ "$name" = "$CRI_PAUSE_IMAGE" ]; then
      # Sleeps forever and stops on SIGKILL, like pause.
      config_json='"Env":["PATH=/bin"],"Cmd":["sleep","2147483647"],"StopSignal":"SIGKILL"'
    else
      config_json='"Env":["PATH=/bin"],"Cmd":["sh"]'
    fi
    printf '{"architecture":"%s","os":"linux","config":{%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$arch" "$config_json" "$diff_id" >"$work/config.json"
    config="$(cri_blob "$work" "$work/config.json")"
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
      "$config" "$(stat -c %s "$work/config.json")" "$layer" "$layer_size" >"$work/manifest.json"
    manifest="$(cri_blob "$work" "$work/manifest.json")"
    manifests="$manifests${manifests:+,}$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
      "$manifest" "$(stat -c %s "$work/manifest.json")" "$arch" "$name" "${name##*:}")"
  done
  printf '{"schemaVersion":2,"manifests":[%s]}' "$manifests" >"$work/oci/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
  tar -C "$work/oci" -cf "$work/images.tar" .
  cri_ctr images import "$work/images.tar" >/dev/null
  rm -rf "$work"
}

# Copies a file into the layout's blobs; prints its sha256.
cri_blob() {
  local digest
  digest="$(sha256sum <"$2" | cut -d' ' -f1)"
  cp "$2" "$1/oci/blobs/sha256/$digest"
  echo "$digest"
}

# Starts the private containerd unless one answers at the socket, and imports the test images.
start_containerd() {
  ensure_containerd_packages
  export KUBELET_TS_CRI_ENDPOINT="unix://$CRI_SOCK" KUBELET_TS_CRI_CGROUP_PARENT="$CRI_CGROUP_PARENT"
  if cri_answers; then
    echo "== containerd (CRI) already running at $CRI_SOCK"
    cri_import_images
    return
  fi
  # What an instance that died (a killed run) left behind goes first: start from nothing.
  teardown_containerd
  echo "== starting containerd with CRI at $CRI_SOCK (log: $CRI_LOG)"
  cri_write_config
  cri_as_root sh -c "containerd --config '$CRI_DIR/config.toml' >>'$CRI_LOG' 2>&1 & echo \$! >'$CRI_DIR/containerd.pid'"
  for _ in $(seq 1 150); do
    if cri_answers; then
      cri_import_images
      return
    fi
    sleep 0.2
  done
  echo "containerd did not answer with its CRI plugin within 30 s; last log lines:" >&2
  tail -20 "$CRI_LOG" >&2
  return 1
}

# scripts/test.sh's hook: start it, and remember that this run did, so that it is stopped at exit.
ensure_containerd() {
  if cri_answers; then start_containerd; return; fi
  start_containerd && touch "$CRI_STARTED"
}

stop_containerd() {
  echo "== stopping containerd at $CRI_SOCK"
  teardown_containerd
  rm -f "$CRI_STARTED"
}

# services.sh's stop_services calls this (when this file was sourced): only what ensure_containerd started.
stop_containerd_if_started() {
  if [ -f "$CRI_STARTED" ]; then stop_containerd; fi
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
  if [ -f "$CRI_DIR/containerd.pid" ]; then
    pid="$(cat "$CRI_DIR/containerd.pid")"
    if [ -d "/proc/$pid" ] && grep -qF -- "$CRI_DIR/config.toml" "/proc/$pid/cmdline" 2>/dev/null; then
      cri_as_root kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
      cri_as_root kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  # Shims it started that outlived it (their command line names our socket), and their sockets,
  # which containerd names sha256(<address>/<namespace>/<id>) under /run/containerd/s.
  for pid in $(pgrep -f -- "-address $CRI_SOCK( |$)" || true); do cri_as_root kill -9 "$pid" 2>/dev/null || true; done
  for id in "${ids[@]}"; do
    cri_as_root rm -f "/run/containerd/s/$(printf '%s' "$CRI_SOCK/k8s.io/$id" | sha256sum | cut -d' ' -f1)" "/var/lib/cni/results/cni-loopback-$id-lo"
  done
  cri_as_root rmdir /run/containerd/s /run/containerd 2>/dev/null || true
  cri_teardown_cgroups "${ids[@]}"
  # Rootfs, shm and network-namespace mounts under the folder, deepest first.
  if [ -d "$CRI_DIR" ]; then
    { findmnt -rn -o TARGET | grep -F -- "$CRI_DIR/" | sort -r | while read -r target; do cri_as_root umount -l "$target" 2>/dev/null || true; done; } || true
    cri_as_root rm -rf --one-file-system "$CRI_DIR"
  fi
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
  for dir in "${dirs[@]}"; do
    { find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do cri_as_root kill -9 "$pid" 2>/dev/null || true; done; } || true
  done
  sleep 0.1
  for dir in "${dirs[@]}"; do find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null || true; done
}

# The bridge, the portmap plugin's rules for our network, and CNI's cached results for it.
cri_teardown_network() {
  ip link show "$CRI_BRIDGE" >/dev/null 2>&1 && cri_as_root ip link del "$CRI_BRIDGE"
  cri_as_root rm -f /var/lib/cni/results/"$CRI_NETWORK"-* 2>/dev/null || true
  command -v iptables >/dev/null || return 0
  local rule chain
  # portmap tags every rule it adds with `name: "<network>"`; its per-pod chains are CNI-DN-*.
  local ours=()
  while read -r rule; do
    [ -n "$rule" ] || continue
    chain="$(sed -E 's/.* -j (CNI-DN-[0-9a-f]+).*/\1/' <<<"$rule")"
    [[ "$chain" == CNI-DN-* ]] && ours+=("$chain")
    eval "cri_as_root iptables -t nat ${rule/-A /-D }" 2>/dev/null || true
  done < <(cri_as_root iptables -t nat -S 2>/dev/null | grep -F "name: \\\"$CRI_NETWORK\\\"")
  for chain in "${ours[@]}"; do
    cri_as_root iptables -t nat -F "$chain" 2>/dev/null || true
    cri_as_root iptables -t nat -X "$chain" 2>/dev/null || true
  done
  # The shared CNI-HOSTPORT-* chains go when no other CNI network has a rule in them.
  if cri_as_root iptables -t nat -S CNI-HOSTPORT-DNAT >/dev/null 2>&1 && [ "$(cri_as_root iptables -t nat -S CNI-HOSTPORT-DNAT | grep -c '^-A')" = 0 ] &&
    [ "$(cri_as_root iptables -t nat -S CNI-HOSTPORT-SNAT 2>/dev/null | grep -c '^-A')" = 0 ]; then
    while read -r rule; do
      eval "cri_as_root iptables -t nat ${rule/-A /-D }" 2>/dev/null || true
    done < <(cri_as_root iptables -t nat -S | grep -E '^-A (PREROUTING|OUTPUT|POSTROUTING) .*-j CNI-HOSTPORT-')
    for chain in CNI-HOSTPORT-DNAT CNI-HOSTPORT-SNAT CNI-HOSTPORT-MASQ CNI-HOSTPORT-SETMARK; do
      cri_as_root iptables -t nat -F "$chain" 2>/dev/null || true
      cri_as_root iptables -t nat -X "$chain" 2>/dev/null || true
    done
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    start) start_containerd ;;
    stop) stop_containerd ;;
    stop-if-started) stop_containerd_if_started ;;
    status) if cri_answers; then echo "containerd (CRI) answers at unix://$CRI_SOCK"; else echo "no containerd at $CRI_SOCK"; exit 1; fi ;;
    env) echo "export KUBELET_TS_CRI_ENDPOINT=unix://$CRI_SOCK KUBELET_TS_CRI_CGROUP_PARENT=$CRI_CGROUP_PARENT" ;;
    *) echo "usage: $0 start|stop|stop-if-started|status|env" >&2; exit 2 ;;
  esac
fi
