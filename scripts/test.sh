#!/usr/bin/env bash
# `npm test`: installs what the tests need (Docker engine, etcd, containerd, Podman) on a fresh
# Debian machine, builds the Kubernetes control plane from the Go module proxy once (cached outside
# the checkout by release), starts the engines (the suites start their services — etcd, HTTP,
# Prometheus, the control plane — through @kubelet-ts/testkit's testcontainers modules), builds,
# runs every package's tests, and stops at exit the engines that this run started, and only those.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
source scripts/containerd.sh
source scripts/podman.sh
# Set before the first start: an engine that fails to come up must not leave the others running.
trap stop_engines_started_here EXIT

ensure_packages
# Before any suite's time-out starts: 7-11 minutes cold, nothing once cached (docs/TESTING.md).
control_plane="$(bash packages/testkit/control-plane/build.sh build)"
# The tests' kubectl is the control plane's release: the image's 1.32 is outside kubectl's supported
# skew (one minor), and its WebSocket exec drops output that arrives before it has made its streams
# (client-go fixed that race later): 4 execs in 300 lost their stdout here.
export PATH="$control_plane/client:$PATH"
start_docker
start_containerd
start_podman

export TURBO_TELEMETRY_DISABLED=1
npm run typecheck --silent
# Formatting and lint (biome): a change that is not formatted, or that the linter refuses, fails here.
npx biome ci . --colors=off --error-on-warnings
# The published packages' API (scripts/api-docs.js, about 5 s on the emitted .d.ts): a report in
# docs/api-reports/ that differs, an export without a doc comment or a broken {@link} fails here.
node scripts/api-docs.js check
find . \( -name .jest-results.json -o -name .vitest-results.json \) -not -path "*/node_modules/*" -delete
npx turbo run test --concurrency=1 --output-logs=full --log-order=grouped
node scripts/summarise-tests.js
