import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

const bin = fileURLToPath(new URL('../bin/kubelet-ts.js', import.meta.url));

/** Runs `kubelet-ts --runonce` on the in-memory runtime as a process. */
function runonce(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, '--runonce', '--runtime', 'memory', '--hostname-override', 'runonce-node', '--runonce-timeout', '10s', ...args],
      { timeout: 30_000 },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

describe('kubelet-ts --runonce says when a source could not give its manifests (issue 27)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-runonce-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('exits 1, naming the field, when its only manifest is rejected', async () => {
    const config = join(dir, 'bad');
    await writeFile(config, 'id: web\ncontainers:\n  - name: Web_1\n    image: app:1\n');
    const run = await runonce([`--config=${config}`]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^file ManifestRejected: .*\(id "web"\): containers\[0\]\.name/m);
  });

  it('exits 1 when --manifest-url cannot be reached', async () => {
    const run = await runonce(['--manifest-url', 'http://127.0.0.1:9/manifests']);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/SourceError: .*127\.0\.0\.1:9/);
  });

  it('exits 0 when every container runs, and says that --etcd-servers is not read', async () => {
    const config = join(dir, 'good');
    await writeFile(config, 'id: web\ncontainers:\n  - name: web\n    image: app:1\n');
    const run = await runonce([`--config=${config}`, '--etcd-servers', 'http://127.0.0.1:9']);
    expect(run.stdout).toMatch(/^web\/web running /m);
    expect(run.stdout).toContain('--etcd-servers is not read'); // the log, on stdout
    expect(run.code).toBe(0);
  });
});
