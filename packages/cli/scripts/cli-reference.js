#!/usr/bin/env node
// Writes the reference part of docs/CLI.md (between its markers) from the built CLI's commander
// definitions, so that the page says exactly the flags, defaults and usage `--help` says.
// `--check`: write nothing, exit 1 when the page is out of date. Build first (`npx tsc -b`).
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { REGENERATE, cliReference, spliceReference } from '../dist/cli-reference.js';

const page = fileURLToPath(new URL('../../../docs/CLI.md', import.meta.url));
const before = await readFile(page, 'utf8');
const after = spliceReference(before, cliReference());
if (process.argv.includes('--check')) {
  if (after !== before) {
    process.stderr.write(`docs/CLI.md is out of date with the CLI: run \`${REGENERATE}\`\n`);
    process.exitCode = 1;
  }
} else if (after !== before) {
  await writeFile(page, after);
  process.stdout.write('docs/CLI.md: reference written\n');
} else {
  process.stdout.write('docs/CLI.md: reference up to date\n');
}
