#!/usr/bin/env bash
# A package's vitest run (the conformance kit under vitest): `vitest run` exits when done, its results
# are kept for scripts/summarise-tests.js, and a run in which no test ran fails (a pass of nothing
# would hide a config that matches no file or a contract that declared no test).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rm -f .vitest-results.json
node "$root/node_modules/vitest/vitest.mjs" run --reporter=default --reporter=json --outputFile.json=.vitest-results.json "$@"
status=$?
node -e '
  const { existsSync, readFileSync } = require("node:fs");
  const file = ".vitest-results.json";
  if (!existsSync(file)) { console.error(`vitest wrote no ${file}`); process.exit(1); }
  const r = JSON.parse(readFileSync(file, "utf8"));
  if (r.numPassedTests + r.numFailedTests === 0) { console.error(`vitest ran no test (${r.numTotalTests} found, ${r.numPendingTests} skipped)`); process.exit(1); }
' || exit 1
exit "$status"
