// Prints (and writes to <dir>/SUMMARY.md) one table row per suite figures file that
// `npm run reliability` left in <dir>: the numbers docs/RELIABILITY.md quotes.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? 'reliability/out';
const suites = readdirSync(dir)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')));
const lines = ['| suite | figures |', '| --- | --- |'];
for (const { suite, ...figures } of suites) {
  const text = Object.entries(figures)
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`)
    .join(', ');
  lines.push(`| ${suite} | ${text} |`);
}
const table = `${lines.join('\n')}\n`;
writeFileSync(join(dir, 'SUMMARY.md'), table);
process.stdout.write(table);
