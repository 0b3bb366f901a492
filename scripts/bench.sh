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
start_docker
start_containerd
npx tsc -b
node --expose-gc bench/dist/run.js "$@"
