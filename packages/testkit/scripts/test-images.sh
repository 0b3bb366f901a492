# shellcheck shell=bash
# The test images, built with no registry and no engine: one archive in `docker save` format holding
# $TEST_BUSYBOX_IMAGE and $TEST_PAUSE_IMAGE (engines.env beside it), which share their one layer:
# Debian's static busybox with its applets as links, PATH=/bin; and $TEST_ETCD_IMAGE, Debian's etcd
# with the libraries it links (a gRPC server with the health service). `docker load`, `podman load`
# and `ctr images import` all take this format; Docker 20.10 cannot load an OCI layout.
#
#   source packages/testkit/scripts/test-images.sh; build_test_images OUT.tar   # the engine scripts
#   bash packages/testkit/scripts/test-images.sh OUT.tar              # @kubelet-ts/testkit

[ -n "${TEST_BUSYBOX_IMAGE:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/engines.env"

build_test_images() {
  local out="$1" work arch applet
  if [ ! -x "$BUSYBOX_BINARY" ]; then
    echo "the test images need a static busybox at $BUSYBOX_BINARY: apt-get install -y busybox-static (npm test does this)" >&2
    return 1
  fi
  if [ ! -x "$ETCD_BINARY" ]; then
    echo "the test images need etcd at $ETCD_BINARY: apt-get install -y etcd-server (npm test does this)" >&2
    return 1
  fi
  work="$(mktemp -d)"
  mkdir -p "$work/rootfs/bin" "$work/etcd/bin" "$work/archive"
  cp "$BUSYBOX_BINARY" "$work/rootfs/bin/busybox"
  for applet in $("$BUSYBOX_BINARY" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$work/rootfs/bin/$applet"
  done
  # etcd and what the loader needs to run it, each at its own path.
  cp "$ETCD_BINARY" "$work/etcd/bin/etcd"
  local lib
  for lib in $(ldd "$ETCD_BINARY" | grep -o '/[^ ]*'); do
    mkdir -p "$work/etcd$(dirname "$lib")"
    cp -L "$lib" "$work/etcd$lib"
  done
  arch="$(dpkg --print-architecture)"
  case "$arch" in i386) arch=386 ;; armhf | armel) arch=arm ;; esac

  # Fixed owners and times: the same files give the same layer, so a load of it again adds nothing.
  local busybox_layer etcd_layer
  busybox_layer="$(test_image_layer "$work/rootfs" "$work/archive")"
  etcd_layer="$(test_image_layer "$work/etcd" "$work/archive")"

  # One config per image (what differs is the command); manifest.json lists them over their layers.
  local name config layer digest entries=()
  for name in "$TEST_BUSYBOX_IMAGE" "$TEST_PAUSE_IMAGE" "$TEST_ETCD_IMAGE"; do
    layer="$busybox_layer"
    if [ "$name" = "$TEST_PAUSE_IMAGE" ]; then
      # Sleeps forever and stops on SIGKILL, like pause.
      config='"Env":["PATH=/bin"],"Cmd":["sleep","2147483647"],"StopSignal":"SIGKILL"'
    elif [ "$name" = "$TEST_ETCD_IMAGE" ]; then
      # Its data in / (etcd's default, default.etcd), clients on every address of the pod.
      config='"Env":["PATH=/bin"],"Entrypoint":["etcd"],"Cmd":["--listen-client-urls","http://0.0.0.0:2379","--advertise-client-urls","http://127.0.0.1:2379"]'
      layer="$etcd_layer"
    else
      config='"Env":["PATH=/bin"],"Cmd":["sh"]'
    fi
    printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":{%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
      "$arch" "$config" "$layer" >"$work/config.json"
    digest="$(sha256sum <"$work/config.json" | cut -d' ' -f1)"
    mv "$work/config.json" "$work/archive/$digest.json"
    # Named in full: Podman would read an unqualified name as localhost/…, where Docker and
    # containerd read docker.io/… (and the Docker adapter shows Podman's names in Docker's form).
    case "${name%%/*}" in *.* | *:* | localhost) ;; *) name="docker.io/$name" ;; esac
    entries+=("$(printf '{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}' "$digest" "$name" "$layer")")
  done
  (IFS=,; printf '[%s]' "${entries[*]}") >"$work/archive/manifest.json"
  # Members named without a leading ./, as `docker save` writes them (the names hold no space).
  # shellcheck disable=SC2046
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/archive" -cf "$out" $(ls "$work/archive")
  rm -rf "$work"
}

# test_image_layer ROOTFS ARCHIVE: ROOTFS as a layer in ARCHIVE (<diff id>/layer.tar); prints its diff id.
test_image_layer() {
  local rootfs="$1" archive="$2" diff_id
  # Members named as the root's entries are (bin/…, lib/…), without a leading ./.
  # shellcheck disable=SC2046
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$archive/layer.tar" $(ls "$rootfs")
  diff_id="$(sha256sum <"$archive/layer.tar" | cut -d' ' -f1)"
  mkdir -p "$archive/$diff_id"
  mv "$archive/layer.tar" "$archive/$diff_id/layer.tar"
  echo "$diff_id"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  [ "$#" -eq 1 ] || { echo "usage: $0 OUT.tar" >&2; exit 2; }
  build_test_images "$1"
fi
