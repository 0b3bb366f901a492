# shellcheck shell=bash
# The test images, built with no registry and no engine: one archive in `docker save` format holding
# $TEST_BUSYBOX_IMAGE and $TEST_PAUSE_IMAGE (scripts/engines.env), which share their one layer:
# Debian's static busybox with its applets as links, PATH=/bin. `docker load`, `podman load` and
# `ctr images import` all take this format; Docker 20.10 cannot load an OCI layout.
#
#   source scripts/lib/test-images.sh; build_test_images OUT.tar   # the engine scripts
#   bash scripts/lib/test-images.sh OUT.tar                        # @kubelet-ts/testkit

[ -n "${TEST_BUSYBOX_IMAGE:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/../engines.env"

build_test_images() {
  local out="$1" work arch diff_id applet
  if [ ! -x "$BUSYBOX_BINARY" ]; then
    echo "the test images need a static busybox at $BUSYBOX_BINARY: apt-get install -y busybox-static (npm test does this)" >&2
    return 1
  fi
  work="$(mktemp -d)"
  mkdir -p "$work/rootfs/bin" "$work/archive"
  cp "$BUSYBOX_BINARY" "$work/rootfs/bin/busybox"
  for applet in $("$BUSYBOX_BINARY" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$work/rootfs/bin/$applet"
  done
  # Fixed owners and times: the same busybox gives the same layer, so a load of it again adds nothing.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/rootfs" -cf "$work/layer.tar" bin
  diff_id="$(sha256sum <"$work/layer.tar" | cut -d' ' -f1)"
  mkdir "$work/archive/$diff_id"
  mv "$work/layer.tar" "$work/archive/$diff_id/layer.tar"
  arch="$(dpkg --print-architecture)"
  case "$arch" in i386) arch=386 ;; armhf | armel) arch=arm ;; esac

  # One config per image (what differs is the command); manifest.json lists both over the one layer.
  local name config digest entries=()
  for name in "$TEST_BUSYBOX_IMAGE" "$TEST_PAUSE_IMAGE"; do
    if [ "$name" = "$TEST_PAUSE_IMAGE" ]; then
      # Sleeps forever and stops on SIGKILL, like pause.
      config='"Env":["PATH=/bin"],"Cmd":["sleep","2147483647"],"StopSignal":"SIGKILL"'
    else
      config='"Env":["PATH=/bin"],"Cmd":["sh"]'
    fi
    printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":{%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
      "$arch" "$config" "$diff_id" >"$work/config.json"
    digest="$(sha256sum <"$work/config.json" | cut -d' ' -f1)"
    mv "$work/config.json" "$work/archive/$digest.json"
    # Named in full: Podman would read an unqualified name as localhost/…, where Docker and
    # containerd read docker.io/… (and the Docker adapter shows Podman's names in Docker's form).
    case "${name%%/*}" in *.* | *:* | localhost) ;; *) name="docker.io/$name" ;; esac
    entries+=("$(printf '{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}' "$digest" "$name" "$diff_id")")
  done
  (IFS=,; printf '[%s]' "${entries[*]}") >"$work/archive/manifest.json"
  # Members named without a leading ./, as `docker save` writes them (the names hold no space).
  # shellcheck disable=SC2046
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/archive" -cf "$out" $(ls "$work/archive")
  rm -rf "$work"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  [ "$#" -eq 1 ] || { echo "usage: $0 OUT.tar" >&2; exit 2; }
  build_test_images "$1"
fi
