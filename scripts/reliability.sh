#!/usr/bin/env bash
# `npm run reliability`: the long runs of the fuzz and chaos suites (npm test runs them short).
# Installs etcd when missing (the etcd source's fuzz launches its own), builds, runs every
# `fuzz` and `chaos` test in long mode, and writes each suite's figures to reliability/out/,
# summarised in reliability/out/SUMMARY.md. Replay one seed with KUBELET_TS_SEED=<n>.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
ensure_packages

export KUBELET_TS_RELIABILITY=long
export KUBELET_TS_RELIABILITY_OUT="$PWD/reliability/out"
rm -rf "$KUBELET_TS_RELIABILITY_OUT"
npx tsc -b
status=0
for pkg in packages/conformance adapters/source-file adapters/source-http adapters/source-etcd adapters/source-server packages/runner; do
  echo "== $pkg"
  (cd "$pkg" && node --expose-gc --experimental-vm-modules ../../node_modules/jest/bin/jest.js \
    --testPathPatterns '(fuzz|chaos)\.test\.ts$' --testTimeout 7200000 "$@") || status=1
done
node scripts/summarise-reliability.js "$KUBELET_TS_RELIABILITY_OUT"
exit $status
