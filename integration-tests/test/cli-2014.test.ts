import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Labels } from '@kubelet-ts/core';
import { buildTestImages, removeLabelled, TEST_IMAGES } from '@kubelet-ts/testkit';
import { AgentProcess, cliPath, repoRoot } from './agent-process.js';

const run = promisify(execFile);
const NODE = `runonce-${process.pid}`;
/** The second run is another node's, so it leaves the first run's pod alone (and does not wait out its grace). */
const NODE2 = `runonce-b-${process.pid}`;

/** Runs the CLI to its end; resolves with its exit code and output, whatever the code. */
async function cli(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cliPath, ...args], { cwd: repoRoot, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const pod = (id: string, image: string) =>
  `version: v1beta1\nid: ${id}\ncontainers:\n  - name: main\n    image: ${image}\n    command: ["sleep", "3600"]\n`;

describe('2014 command lines: single-dash flags, --enable_server=false, --runonce', () => {
  let dir: string;
  let volumes: string;

  beforeAll(async () => {
    await buildTestImages();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-2014-'));
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-2014-volumes-'));
  });

  afterAll(async () => {
    await removeLabelled(`${Labels.node}=${NODE}`);
    await removeLabelled(`${Labels.node}=${NODE2}`);
    await rm(dir, { recursive: true, force: true });
    await rm(volumes, { recursive: true, force: true });
  });

  it('runs an agent from a 2014 command line with no server', async () => {
    await writeFile(join(dir, 'web.yaml'), pod('web', 'busybox:1.36'));
    const agent = new AgentProcess([
      '-runtime=memory',
      `-config=${dir}`,
      '-hostname_override=old-node',
      '-sync_frequency=1s',
      '-enable_server=false',
      '--v=2',
      '-logtostderr=true',
    ]);
    try {
      await agent.until(() => agent.events('ContainerStarted', 'web').length === 1, 'web started');
      expect(agent.lines.some((l) => l.msg === 'agent server listening')).toBe(false);
      // --v=2 is debug: the passes that do nothing are logged too.
      await agent.until(() => agent.lines.some((l) => l.msg === 'sync pass' && l.level === 20), 'a debug line');
      expect((await agent.stop('SIGTERM')).code).toBe(0);
    } finally {
      agent.kill();
    }
  });

  it('--runonce: starts what the config asks for, prints a line per container, exits 0 when all run', async () => {
    await writeFile(join(dir, 'web.yaml'), pod('web', TEST_IMAGES.busybox));
    const common = [
      '--runtime',
      'docker',
      '--pod-infra-image',
      TEST_IMAGES.pause,
      '--host-ip',
      '127.0.0.1',
      '--volumes-root',
      volumes,
      '--log-level',
      'warn',
    ];
    const ok = await cli(['-runonce', `-config=${dir}`, '--hostname-override', NODE, ...common]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^web\/main running [0-9a-f]{12,}\n$/);

    // An image no registry has: the line says why, and the exit code is 1.
    await writeFile(join(dir, 'web.yaml'), pod('missing', 'kubelet-ts.invalid/none:1'));
    const failed = await cli(['--runonce', `--config=${dir}`, '--runonce-timeout', '20s', '--hostname-override', NODE2, ...common]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^missing\/main failed: .*kubelet-ts\.invalid\/none:1/m);
  }, 90_000);
});
