#!/usr/bin/env bash
# The Kubernetes control plane the tests run (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler), the real kubelet, and kubectl of the same release (in client/, alone, so that
# npm test can put it first on PATH without putting etcd or the kubelet there), built from the Go
# module proxy at one pinned release into a
# cache outside the checkout, keyed by that release and by the pinned module files, so that a second
# run builds nothing. Nothing of Kubernetes is packaged for Debian or npm; these machines have Go and
# reach the Go module proxy.
#
#   bash build.sh build   # build what is missing, metrics-server too; prints the control plane's folder
#                         # (npm test and startControlPlane do this)
#   bash build.sh dir     # the folder the binaries are (or will be) in
#   bash build.sh metrics-server  # build metrics-server if missing; prints its folder (startMetricsServer)
#   bash build.sh pin     # after changing PINNED_RELEASE: rewrite go.mod and go.sum for it
#
# KUBE_RELEASE=v1.N.M in the environment builds another release: its module is pinned afresh in a
# temp copy (from the Go module proxy, with no committed go.sum to check it against).
#
# Cold on 2 cores: 7 to 11 minutes and about 4 GB of Go build cache (docs/TESTING.md).

# The release: the one line to change (then `bash build.sh pin`, and commit go.mod and go.sum).
PINNED_RELEASE=v1.37.2
# etcd's release, a module of its own (etcd/): 3.6, as measured here.
ETCD_RELEASE=v3.6.16
# metrics-server's release, a module of its own (metrics-server/, its go.mod's `tool` line): v0.8.0,
# the approved one (the proxy also serves v0.9.0, which is not). Cold: about 4 minutes on 2 cores.
METRICS_SERVER_RELEASE=v0.8.0

KUBE_RELEASE="${KUBE_RELEASE:-$PINNED_RELEASE}"
CONTROL_PLANE_MODULE="${CONTROL_PLANE_MODULE:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
KUBELET_TS_CACHE="${KUBELET_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubelet-ts}"
CONTROL_PLANE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

control_plane_dir() {
  echo "$KUBELET_TS_CACHE/control-plane/$KUBE_RELEASE"
}

# What the binaries were built from: the releases, and every module's hash (go.sum); a change to
# either builds them again. go.mod's comments and module path are not part of it.
control_plane_stamp() {
  {
    echo "$KUBE_RELEASE $ETCD_RELEASE ${CONTROL_PLANE_COMMANDS[*]}"
    cat "$CONTROL_PLANE_MODULE/go.sum" "$CONTROL_PLANE_MODULE/tools.go" \
      "$CONTROL_PLANE_MODULE/etcd/go.sum" "$CONTROL_PLANE_MODULE/etcd/main.go"
  } | sha256sum | cut -c1-16
}

build_control_plane() {
  if [ "$KUBE_RELEASE" != "$PINNED_RELEASE" ] && [ -z "${CONTROL_PLANE_PINNED_COPY:-}" ]; then
    if [ -f "$(control_plane_dir)/.stamp" ]; then
      control_plane_dir
      return 0
    fi
    # Another release: pinned in a copy of the module, never in the committed one.
    local copy status=0
    copy="$(mktemp -d)"
    cp -r "$CONTROL_PLANE_MODULE/." "$copy/"
    CONTROL_PLANE_MODULE="$copy" CONTROL_PLANE_PINNED_COPY=1 bash -c \
      'source "$0/build.sh" && pin_control_plane >&2 && build_control_plane' "$copy" || status=$?
    rm -rf "$copy"
    return "$status"
  fi
  local dir stamp
  dir="$(control_plane_dir)"
  stamp="$(control_plane_stamp)"
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$dir"
    return 0
  fi
  mkdir -p "$(dirname "$dir")"
  # One build of a release at a time; who waited finds it built.
  exec 9>"$dir.lock"
  flock 9
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$dir"
    return 0
  fi
  rm -rf "$dir".building.* # what an interrupted build left
  command -v go >/dev/null || {
    echo "control plane: no Go toolchain on PATH (these machines have Go 1.26; install Go 1.26 or newer)" >&2
    return 1
  }
  local minor="${KUBE_RELEASE#v1.}"
  minor="${minor%%.*}"
  local started=$SECONDS tmp
  # Built beside the cache entry, then moved into place: an interrupted build leaves no half entry.
  tmp="$(mktemp -d "$dir.building.XXXXXX")"
  echo "control plane: building $KUBE_RELEASE and etcd $ETCD_RELEASE into $dir (about 11 minutes cold)" >&2
  local version_flags="-X k8s.io/component-base/version.gitVersion=$KUBE_RELEASE \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
    -X k8s.io/component-base/version.gitTreeState=clean \
    -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_RELEASE \
    -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  local packages=()
  for command in "${CONTROL_PLANE_COMMANDS[@]}"; do packages+=("k8s.io/kubernetes/cmd/$command"); done
  # -mod=readonly: go.mod and go.sum are the pins; a build never rewrites them.
  if ! (cd "$CONTROL_PLANE_MODULE" &&
    CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w $version_flags" -o "$tmp/" "${packages[@]}" &&
    cd etcd && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" .); then
    rm -rf "$tmp"
    echo "control plane: the build failed (output above)" >&2
    return 1
  fi
  mkdir "$tmp/client"
  mv "$tmp/kubectl" "$tmp/client/kubectl"
  echo "$stamp" >"$tmp/.stamp"
  echo "$KUBE_RELEASE" >"$tmp/.release"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  echo "control plane: built in $((SECONDS - started)) s, $(du -sh "$dir" | cut -f1) in $dir" >&2
  echo "$dir"
}

metrics_server_dir() {
  echo "$KUBELET_TS_CACHE/metrics-server/$METRICS_SERVER_RELEASE"
}

# What metrics-server was built from: its release and its module's pins (go.mod's `tool` line and
# requirements, go.sum's hashes); a change to either builds it again.
metrics_server_stamp() {
  {
    echo "$METRICS_SERVER_RELEASE"
    cat "$CONTROL_PLANE_MODULE/metrics-server/go.mod" "$CONTROL_PLANE_MODULE/metrics-server/go.sum"
  } | sha256sum | cut -c1-16
}

# metrics-server, static, into a cache entry of its own beside the control plane's (keyed by its
# release, stamped by its module's pins): built once, like the control plane.
build_metrics_server() {
  local dir stamp
  dir="$(metrics_server_dir)"
  stamp="$(metrics_server_stamp)"
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$dir"
    return 0
  fi
  mkdir -p "$(dirname "$dir")"
  exec 8>"$dir.lock"
  flock 8
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$dir"
    return 0
  fi
  rm -rf "$dir".building.*
  command -v go >/dev/null || {
    echo "metrics-server: no Go toolchain on PATH (these machines have Go 1.26; install Go 1.26 or newer)" >&2
    return 1
  }
  local started=$SECONDS tmp
  tmp="$(mktemp -d "$dir.building.XXXXXX")"
  echo "metrics-server: building $METRICS_SERVER_RELEASE into $dir (about 4 minutes cold)" >&2
  # metrics-server reports client-go's version (its Makefile's VERSION_LDFLAGS): without it, v0.0.0.
  local version_flags="-X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_RELEASE \
    -X k8s.io/client-go/pkg/version.gitTreeState=clean"
  if ! (cd "$CONTROL_PLANE_MODULE/metrics-server" &&
    CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w $version_flags" \
      -o "$tmp/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server); then
    rm -rf "$tmp"
    echo "metrics-server: the build failed (output above)" >&2
    return 1
  fi
  echo "$stamp" >"$tmp/.stamp"
  echo "$METRICS_SERVER_RELEASE" >"$tmp/.release"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  echo "metrics-server: built in $((SECONDS - started)) s, $(du -sh "$dir" | cut -f1) in $dir" >&2
  echo "$dir"
}

# Rewrites go.mod for KUBE_RELEASE from k8s.io/kubernetes' own go.mod (each staging module it
# replaces with ./staging/... pinned to the matching v0 release), then go.sum with `go mod tidy`.
pin_control_plane() {
  local staging="v0.${KUBE_RELEASE#v1.}" gomod
  gomod="$(go mod download -json "k8s.io/kubernetes@$KUBE_RELEASE" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  {
    echo "// The control plane that the tests run, and the real kubelet the bench measures, built from the"
    echo "// Go module proxy at one release (build.sh). Generated by 'build.sh pin' from"
    echo "// k8s.io/kubernetes' own go.mod: its staging modules are pinned to the matching v0 release."
    echo "module github.com/kubelet-ts/kubelet-ts/packages/testkit/control-plane"
    echo
    echo "go $(sed -n 's/^go //p' "$gomod")"
    echo
    echo "require k8s.io/kubernetes $KUBE_RELEASE"
    echo
    echo "replace ("
    grep "=> ./staging" "$gomod" | awk -v v="$staging" '{print "\t"$1" => "$1" "v}'
    echo ")"
  } >"$CONTROL_PLANE_MODULE/go.mod"
  (cd "$CONTROL_PLANE_MODULE" && rm -f go.sum && GOFLAGS=-mod=mod go mod tidy)
  (cd "$CONTROL_PLANE_MODULE/etcd" && GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$ETCD_RELEASE" && GOFLAGS=-mod=mod go mod tidy)
  (cd "$CONTROL_PLANE_MODULE/metrics-server" &&
    GOFLAGS=-mod=mod go get -tool "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_RELEASE")
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    # metrics-server first, its folder not printed: the last line is the control plane's folder.
    build) build_metrics_server >/dev/null && build_control_plane ;;
    metrics-server) build_metrics_server ;;
    dir) control_plane_dir ;;
    pin) pin_control_plane ;;
    *) echo "usage: $0 build|dir|metrics-server|pin" >&2; exit 2 ;;
  esac
fi
