#!/usr/bin/env bash
# A package's `npm test`: jest in ESM mode, its results kept for scripts/summarise-tests.js.
root="$(cd "$(dirname "$0")/.." && pwd)"
exec node --experimental-vm-modules "$root/node_modules/jest/bin/jest.js" --json --outputFile=.jest-results.json "$@"
