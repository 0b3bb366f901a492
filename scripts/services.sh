# Installs the real services the tests run against (a Docker engine, etcd) and starts the engine;
# the etcd suites launch etcds of their own through @kubelet-ts/testkit.
# Sourced by scripts/test.sh; safe to run again on a machine that already has them.

STATE_DIR="${KUBELET_TS_STATE_DIR:-/tmp/kubelet-ts-services}"
mkdir -p "$STATE_DIR"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root (or sudo) to run: $*" >&2; return 1
  fi
}

# apt-get install only what is missing, so a warm machine skips the network.
ensure_packages() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v etcd >/dev/null || missing+=(etcd-server)
  dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "== installing ${missing[*]} (Debian packages)"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Starts dockerd unless an engine already answers; records that we started it. dockerd keeps its
# own pidfile, so an engine a fault test stopped and started again (same arguments) is still ours.
ensure_docker() {
  if docker info >/dev/null 2>&1; then echo "== docker engine already running"; return; fi
  # A dockerd that was killed (SIGKILL: a wedged engine) leaves its pidfile, and a new one refuses to start.
  if [ -f "$STATE_DIR/dockerd.pid" ] && ! kill -0 "$(cat "$STATE_DIR/dockerd.pid")" 2>/dev/null; then
    as_root rm -f "$STATE_DIR/dockerd.pid"
  fi
  echo "== starting dockerd (log: $STATE_DIR/dockerd.log)"
  as_root sh -c "dockerd --pidfile '$STATE_DIR/dockerd.pid' >>'$STATE_DIR/dockerd.log' 2>&1 &"
  touch "$STATE_DIR/dockerd.started"
  for _ in $(seq 1 150); do
    docker info >/dev/null 2>&1 && return
    sleep 0.2
  done
  echo "dockerd did not answer within 30 s; last log lines:" >&2
  tail -20 "$STATE_DIR/dockerd.log" >&2
  return 1
}

# Stops the engine only if ensure_docker started it.
stop_services() {
  ! declare -F stop_containerd_if_started >/dev/null || stop_containerd_if_started
  ! declare -F stop_podman_if_started >/dev/null || stop_podman_if_started
  if [ -f "$STATE_DIR/dockerd.started" ]; then
    [ -f "$STATE_DIR/dockerd.pid" ] && as_root kill "$(cat "$STATE_DIR/dockerd.pid")" 2>/dev/null || true
    rm -f "$STATE_DIR/dockerd.started"
  fi
}
