# Installs and starts the real services the tests run against: a Docker engine and etcd.
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

etcd_healthy() {
  node -e 'fetch(process.argv[1] + "/health").then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1"
}

# Starts a throw-away etcd on loopback unless one answers on ETCD_ENDPOINTS.
ensure_etcd() {
  export ETCD_ENDPOINTS="${ETCD_ENDPOINTS:-http://127.0.0.1:23790}"
  if etcd_healthy "${ETCD_ENDPOINTS%%,*}"; then
    echo "== etcd already running at $ETCD_ENDPOINTS"; return
  fi
  local client="${ETCD_ENDPOINTS%%,*}" peer
  peer="http://127.0.0.1:$(( ${client##*:} + 1 ))"
  rm -rf "$STATE_DIR/etcd-data"
  echo "== starting etcd at $client (log: $STATE_DIR/etcd.log)"
  etcd --name kubelet-ts-test --data-dir "$STATE_DIR/etcd-data" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "kubelet-ts-test=$peer" >"$STATE_DIR/etcd.log" 2>&1 &
  echo $! >"$STATE_DIR/etcd.pid"
  for _ in $(seq 1 100); do
    etcd_healthy "$client" && return
    sleep 0.2
  done
  echo "etcd did not answer within 20 s; last log lines:" >&2
  tail -20 "$STATE_DIR/etcd.log" >&2
  return 1
}

# Stops only what ensure_docker / ensure_etcd started.
stop_services() {
  if [ -f "$STATE_DIR/etcd.pid" ]; then kill "$(cat "$STATE_DIR/etcd.pid")" 2>/dev/null || true; rm -f "$STATE_DIR/etcd.pid"; fi
  if [ -f "$STATE_DIR/dockerd.started" ]; then
    [ -f "$STATE_DIR/dockerd.pid" ] && as_root kill "$(cat "$STATE_DIR/dockerd.pid")" 2>/dev/null || true
    rm -f "$STATE_DIR/dockerd.started"
  fi
}
