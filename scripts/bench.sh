#!/usr/bin/env bash
# `npm run bench`: starts the Docker engine and the private containerd (CRI) if needed (as npm
# test does, stopping at exit only what it started), builds, runs every benchmark scenario, and
# writes bench/out/results.json and bench/out/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
source scripts/containerd.sh
trap stop_engines_started_here EXIT
ensure_packages
# kubectl of the control plane's release first on PATH, as npm test has it (scripts/test.sh).
control_plane="$(bash packages/testkit/control-plane/build.sh build)"
export PATH="$control_plane/client:$PATH"
start_docker
start_containerd
npx tsc -b
node --expose-gc bench/dist/run.js "$@"
