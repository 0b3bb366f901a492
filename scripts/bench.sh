#!/usr/bin/env bash
# `npm run bench`: starts the Docker engine and the private containerd (CRI) if needed (as npm
# test does), builds, runs every benchmark scenario, and writes bench/out/results.json and
# bench/out/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
# Engines an earlier run started (and others may be using now) leave their `.started` flags, and
# stop_services stops every flagged one: stop at exit only when no engine was flagged before this run.
flagged_before=$(ls "$STATE_DIR"/*.started 2>/dev/null || true)
ensure_packages
ensure_docker
source scripts/containerd.sh && ensure_containerd
[ -n "$flagged_before" ] || trap stop_services EXIT
export TESTCONTAINERS_RYUK_DISABLED=true
npx tsc -b
node --expose-gc bench/dist/run.js "$@"
