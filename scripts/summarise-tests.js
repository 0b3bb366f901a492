// Adds up the results every package wrote into one closing line: jest's (.jest-results.json) and, for
// the packages that also run vitest (the conformance kit under vitest), vitest's (.vitest-results.json,
// from its JSON reporter, which has jest's fields). A package's results count once per runner.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const RESULT_FILES = { jest: '.jest-results.json', vitest: '.vitest-results.json' };

const root = JSON.parse(readFileSync('package.json', 'utf8'));
const dirs = root.workspaces.flatMap((w) => (w.endsWith('/*') ? listDirs(w.slice(0, -2)) : [w]));
let passed = 0;
let failed = 0;
let files = 0;
const byRunner = Object.fromEntries(Object.keys(RESULT_FILES).map((runner) => [runner, 0]));
for (const dir of dirs) {
  for (const [runner, name] of Object.entries(RESULT_FILES)) {
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    const r = JSON.parse(readFileSync(file, 'utf8'));
    passed += r.numPassedTests;
    failed += r.numFailedTests;
    // Test files, the same in both (vitest's numTotalTestSuites also counts describe blocks).
    files += r.testResults.length;
    byRunner[runner] += r.numPassedTests + r.numFailedTests;
  }
}
if (files === 0) {
  console.error('no test results found: did any package run its tests?');
  process.exit(1);
}
const split = Object.entries(byRunner)
  .map(([runner, n]) => `${n} under ${runner}`)
  .join(', ');
console.log(`${passed} passed, ${failed} failed (${split})`);
process.exit(failed === 0 ? 0 : 1);

function listDirs(parent) {
  return readdirSync(parent, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => join(parent, e.name));
}
