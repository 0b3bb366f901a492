# What every suite needs installed (a Docker engine, etcd, busybox-static, Prometheus — the scrape
# tests run a real one —, kubectl as the control plane's outside client), and the Docker engine;
# the suites start etcd, HTTP servers, Prometheus and the control plane as containers through
# @kubelet-ts/testkit, which builds their images from what is installed here and loads the test
# images into the engine (packages/testkit/scripts/test-images.sh).
#
#   source scripts/services.sh; ensure_packages; start_docker   # what scripts/test.sh does
#   bash scripts/services.sh start|stop|status                  # by hand

source "$(dirname "${BASH_SOURCE[0]}")/lib/engine.sh"

DOCKERD_PIDFILE="$KUBELET_TS_STATE_DIR/dockerd.pid"
DOCKERD_LOG="$KUBELET_TS_STATE_DIR/dockerd.log"

ensure_packages() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v etcd >/dev/null || missing+=(etcd-server)
  dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
  command -v prometheus >/dev/null || missing+=(prometheus)
  # The testkit's RegistryServer (pull secrets); its htpasswd is made with python3's crypt (bcrypt).
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  [ -x /usr/bin/python3 ] || missing+=(python3)
  # The machine image has kubectl 1.32; Debian's 1.20 is the fallback.
  command -v kubectl >/dev/null || missing+=(kubernetes-client)
  install_debs "${missing[@]}"
}

docker_answers() { docker info >/dev/null 2>&1; }

# Starts dockerd unless an engine already answers.
start_docker() {
  engine_start --own-pidfile docker "$DOCKERD_PIDFILE" "$DOCKERD_LOG" : dockerd --pidfile "$DOCKERD_PIDFILE"
}

# Its containers get dockerd's own shutdown time (15 s) before it is killed.
teardown_docker() {
  engine_kill "$(cat "$DOCKERD_PIDFILE" 2>/dev/null)" "$DOCKERD_PIDFILE" 30
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    start) ensure_packages && start_docker ;;
    stop) engine_stop docker ;;
    status) if docker_answers; then echo "a Docker engine answers"; else echo "no Docker engine answers"; exit 1; fi ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
  esac
fi
