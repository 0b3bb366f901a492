// Adds up the jest results every package wrote (.jest-results.json) into one closing line.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = JSON.parse(readFileSync('package.json', 'utf8'));
const dirs = root.workspaces.flatMap((w) => (w.endsWith('/*') ? listDirs(w.slice(0, -2)) : [w]));
let passed = 0;
let failed = 0;
let suites = 0;
for (const dir of dirs) {
  const file = join(dir, '.jest-results.json');
  if (!existsSync(file)) continue;
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  suites += r.numTotalTestSuites;
}
if (suites === 0) {
  console.error('no test results found: did any package run its tests?');
  process.exit(1);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);

function listDirs(parent) {
  return readdirSync(parent, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(parent, e.name));
}
