import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './agent-process.js';

const run = promisify(execFile);

describe('examples/embed.ts', () => {
  it('builds an agent from the packages with its own source, runs the valid jobs and exits on its own', async () => {
    const { stdout } = await run(process.execPath, [join(repoRoot, 'examples/dist/embed.js')], { cwd: repoRoot, timeout: 10_000 });
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('running:'))).toEqual(['running: cache-warmer, nightly-report', 'running: nightly-report']);
    // The invalid job is rejected with the field that is wrong, and does not stop the others.
    const rejected = lines.filter((l) => l.includes('ManifestRejected')).map((l) => JSON.parse(l) as { msg: string });
    expect(rejected[0]?.msg).toContain('job Bad Job: id: must be a DNS subdomain');
  });
});
