#!/usr/bin/env bash
# `npm test`: installs what the tests need (Docker engine, etcd) on a fresh Debian machine,
# starts the engine (etcd suites launch etcds of their own), builds, runs every package's tests,
# and stops the engine if it started it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh

ensure_packages
ensure_docker
source scripts/containerd.sh && ensure_containerd
source scripts/podman.sh && ensure_podman
trap stop_services EXIT

export TURBO_TELEMETRY_DISABLED=1 TESTCONTAINERS_RYUK_DISABLED=true
npm run typecheck --silent
find . \( -name .jest-results.json -o -name .vitest-results.json \) -not -path "*/node_modules/*" -delete
npx turbo run test --concurrency=1 --output-logs=full --log-order=grouped
node scripts/summarise-tests.js
