# shellcheck shell=bash
# What the engine scripts (services.sh: Docker, containerd.sh, podman.sh) share: the names and
# paths of packages/testkit/scripts/engines.env, root, Debian packages, the test images, and one way to start a
# daemon and to stop it again. An engine script defines NAME_answers and teardown_NAME (which
# stops the daemon and removes what it left), and start_NAME, which calls engine_start.
#
# engine_start marks the engine as this run's ($STATE_DIR/NAME.started holds the run's id), and a
# run's exit trap, stop_engines_started_here, stops the engines marked with its id and no other:
# one that an earlier run left, or that a concurrent run started (runs share the state folder),
# is not this run's to stop.

source "$(dirname "${BASH_SOURCE[0]}")/../../packages/testkit/scripts/engines.env"
source "$(dirname "${BASH_SOURCE[0]}")/../../packages/testkit/scripts/test-images.sh"
mkdir -p "$KUBELET_TS_STATE_DIR"
# The shell that first sourced this file, and when (a pid alone a later run could be given again).
: "${ENGINE_RUN_ID:=$$@$(date +%s%N)}"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root (or sudo) to run: $*" >&2; return 1
  fi
}

# Installs the Debian packages named (those a script found missing): none, no network.
install_debs() {
  [ "$#" -gt 0 ] || return 0
  echo "== installing $* (Debian packages)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# engine_start [--own-pidfile] NAME PIDFILE LOG PREPARE ARGV...
# Nothing when NAME_answers already succeeds. Else runs PREPARE (a command: what a dead instance
# left goes, the configuration is written), spawns ARGV as root in a session of its own (a Ctrl-C
# or CI's timeout reaches the run, whose exit trap stops the engine whole, not the daemon alone),
# its output appended to LOG, and writes its pid to PIDFILE; with --own-pidfile the daemon writes
# it (dockerd --pidfile: a dockerd that a fault test restarts with the same arguments keeps it
# current). Marks NAME as this run's, then waits for NAME_answers, 30 s at most.
engine_start() {
  local own=false
  if [ "$1" = --own-pidfile ]; then own=true; shift; fi
  local name="$1" pidfile="$2" log="$3" prepare="$4"
  shift 4
  if "${name}_answers"; then echo "== $name already answers"; return 0; fi
  $prepare
  echo "== starting $name (log: $log)"
  # A daemon that was killed (a wedged engine) leaves its pidfile, and dockerd refuses to start over one.
  if [ -f "$pidfile" ] && ! engine_pid_running "$(cat "$pidfile")"; then as_root rm -f "$pidfile"; fi
  if $own; then
    as_root setsid -f "$@" >>"$log" 2>&1 </dev/null
  else
    # The shell writes its own pid, which exec makes the daemon's.
    as_root setsid -f sh -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" >>"$log" 2>&1 </dev/null
  fi
  echo "$ENGINE_RUN_ID" >"$KUBELET_TS_STATE_DIR/$name.started"
  for _ in $(seq 1 150); do
    "${name}_answers" && return 0
    sleep 0.2
  done
  echo "$name did not answer within 30 s; last lines of $log:" >&2
  tail -20 "$log" >&2
  return 1
}

# Stops NAME, whoever started it, and drops its mark.
engine_stop() {
  echo "== stopping $1"
  "teardown_$1"
  rm -f "$KUBELET_TS_STATE_DIR/$1.started"
}

# A run's exit trap: stops what it started, the last started first.
stop_engines_started_here() {
  local marker
  while read -r marker; do
    if [ "$(cat "$marker")" = "$ENGINE_RUN_ID" ]; then engine_stop "$(basename "$marker" .started)" || true; fi
  done < <(ls -t "$KUBELET_TS_STATE_DIR"/*.started 2>/dev/null)
}

# Whether a process runs (an exited one that nobody has reaped yet is a zombie: gone).
engine_pid_running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [ "${stat%% *}" != Z ]
}

# engine_kill PID MATCH [SECONDS]: SIGTERM, up to SECONDS (5) to exit, then SIGKILL; only if the
# process's command line holds MATCH (a pid that another process has been given is not ours).
engine_kill() {
  local pid="$1"
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && grep -qF -- "$2" "/proc/$pid/cmdline" 2>/dev/null || return 0
  as_root kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((${3:-5} * 10))); do engine_pid_running "$pid" || return 0; sleep 0.1; done
  as_root kill -9 "$pid" 2>/dev/null || true
}

# Unmounts what is mounted under DIR (rootfs, shm and network-namespace mounts; deepest first),
# then removes DIR without crossing into another file system.
engine_remove_dir() {
  [ -d "$1" ] || return 0
  { findmnt -rn -o TARGET | grep -F -- "$1/" | sort -r | while read -r target; do as_root umount -l "$target" 2>/dev/null || true; done; } || true
  as_root rm -rf --one-file-system "$1"
}

# SIGKILLs every process in the cgroups under each DIR given.
engine_kill_cgroups() {
  local dir
  for dir in "$@"; do
    { find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do as_root kill -9 "$pid" 2>/dev/null || true; done; } || true
  done
}

# iptables_delete_rules TABLE: deletes each rule read from stdin (lines of `iptables -S`).
iptables_delete_rules() {
  local rule
  while read -r rule; do
    if [ -n "$rule" ]; then eval "as_root iptables -t $1 ${rule/-A /-D }" 2>/dev/null || true; fi
  done
}

# iptables_drop_chains TABLE CHAIN...: flushes and deletes each (one that is not there is fine).
iptables_drop_chains() {
  local table="$1" chain
  for chain in "${@:2}"; do
    as_root iptables -t "$table" -F "$chain" 2>/dev/null || true
    as_root iptables -t "$table" -X "$chain" 2>/dev/null || true
  done
}

# engine_load_test_images LOAD...: builds the test images' archive and runs LOAD with its path.
engine_load_test_images() {
  local work status=0
  work="$(mktemp -d)"
  build_test_images "$work/test-images.tar" && "$@" "$work/test-images.tar" >/dev/null || status=$?
  rm -rf "$work"
  return "$status"
}
