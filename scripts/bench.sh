#!/usr/bin/env bash
# `npm run bench`: starts the Docker engine and the private containerd (CRI) if needed (as npm
# test does), builds, runs every benchmark scenario, and writes bench/out/results.json and
# bench/out/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
ensure_packages
ensure_docker
source scripts/containerd.sh && ensure_containerd
trap stop_services EXIT
export TESTCONTAINERS_RYUK_DISABLED=true
npx tsc -b
node --expose-gc bench/dist/run.js "$@"
