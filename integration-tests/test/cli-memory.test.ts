import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AgentProcess, cliPath, repoRoot } from './agent-process.js';

const run = promisify(execFile);

const pod = (id: string, containers: Array<[name: string, image: string]>) =>
  [
    `version: v1beta1`,
    `id: ${id}`,
    `containers:`,
    ...containers.flatMap(([name, image]) => [`  - name: ${name}`, `    image: ${image}`]),
  ].join('\n') + '\n';

describe('kubelet-ts CLI on the in-memory runtime, driven through a manifest directory', () => {
  let dir: string;
  let agent: AgentProcess;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-'));
    await writeFile(join(dir, 'web.yaml'), pod('web', [['nginx', 'nginx:1.25']]));
    await writeFile(
      join(dir, 'batch.yaml'),
      `- ${pod('batch-a', [['job', 'busybox:1.36']])
        .replaceAll('\n', '\n  ')
        .trimEnd()}\n- ${pod('batch-b', [['job', 'busybox:1.36']])
        .replaceAll('\n', '\n  ')
        .trimEnd()}\n`,
    );
    agent = new AgentProcess([
      '--runtime',
      'memory',
      '--config',
      dir,
      '--hostname_override',
      'e2e-host',
      '--sync-frequency',
      '1s',
      '--file-check-frequency',
      '500ms',
    ]);
  });

  afterAll(async () => {
    agent.kill();
    await agent.exit;
    await rm(dir, { recursive: true, force: true });
  });

  const started = (podId: string, container?: string) =>
    agent.events('ContainerStarted', podId).filter((l) => container === undefined || l['container'] === container).length;
  const removed = (podId: string, container?: string) =>
    agent.events('ContainerRemoved', podId).filter((l) => container === undefined || l['container'] === container).length;

  it('starts every manifest of the directory, on the host it was told', async () => {
    await agent.until(() => started('web') === 1 && started('batch-a') === 1 && started('batch-b') === 1, 'all three pods started');
    expect(agent.lines.find((l) => l.msg === 'kubelet starting')?.['hostname']).toBe('e2e-host');
  });

  it('adds a container to an edited manifest without touching the one that was there', async () => {
    await writeFile(
      join(dir, 'web.yaml'),
      pod('web', [
        ['nginx', 'nginx:1.25'],
        ['sidecar', 'busybox:1.36'],
      ]),
    );
    await agent.until(() => started('web', 'sidecar') === 1, 'sidecar started');
    expect(removed('web')).toBe(0);
    expect(started('web', 'nginx')).toBe(1);
  });

  it('removes the pods of a deleted file', async () => {
    await rm(join(dir, 'batch.yaml'));
    await agent.until(() => removed('batch-a') === 1 && removed('batch-b') === 1, 'batch pods removed');
    expect(removed('web')).toBe(0);
  });

  it('rejects an invalid file with its path and field, and leaves the others alone', async () => {
    // The pass that removed the batch pods logs its end after its events: count from there.
    const lastEvent = agent.lines.findLastIndex((l) => l['event'] !== undefined);
    await agent.until(() => agent.lines.slice(lastEvent).some((l) => l.msg === 'sync pass'), 'the last pass to end');
    const passes = agent.lines.filter((l) => l.msg === 'sync pass').length;
    await writeFile(join(dir, 'broken.yaml'), pod('broken', [['main', 'app:1']]).replace('id: broken', 'id: Broken_Pod'));
    await agent.until(() => agent.events('ManifestRejected').length === 1, 'rejection reported');
    const rejection = agent.events('ManifestRejected')[0]!;
    expect(rejection.msg).toContain(join(dir, 'broken.yaml'));
    expect(rejection.msg).toContain('id: must be a DNS subdomain');
    expect(rejection['source']).toBe('file');
    await new Promise((r) => setTimeout(r, 1200)); // a periodic pass and a re-list go by
    expect(removed('web')).toBe(0);
    expect(agent.lines.filter((l) => l.msg === 'sync pass').length).toBe(passes); // nothing to do
    expect(agent.events('ManifestRejected')).toHaveLength(1); // reported once, not every re-list
  });

  it('applies a rename-save: only the changed container is recreated', async () => {
    await writeFile(
      join(dir, '.web.yaml.swp'),
      pod('web', [
        ['nginx', 'nginx:1.25'],
        ['sidecar', 'busybox:1.37'],
      ]),
    );
    await rename(join(dir, '.web.yaml.swp'), join(dir, 'web.yaml'));
    await agent.until(() => removed('web', 'sidecar') === 1 && started('web', 'sidecar') === 2, 'sidecar recreated');
    expect(agent.events('ContainerRemoved', 'web')[0]?.['reason']).toBe('spec-changed');
    expect(removed('web', 'nginx')).toBe(0);
    expect(started('web', 'nginx')).toBe(1);
  });

  it('runs one copy when two files give the same manifest id, and says so', async () => {
    await writeFile(join(dir, 'zz-web-copy.yaml'), pod('web', [['other', 'busybox:1.36']]));
    await agent.until(() => agent.events('ManifestConflict').length === 1, 'conflict reported');
    expect(agent.events('ManifestConflict')[0]?.msg).toContain('zz-web-copy.yaml');
    await new Promise((r) => setTimeout(r, 1200));
    expect(started('web', 'other')).toBe(0);
    expect(removed('web', 'nginx')).toBe(0);
  });

  it('exits 0 on SIGTERM, on its own, leaving no handle open', async () => {
    const { code, signal } = await agent.stop('SIGTERM');
    expect(signal).toBeNull();
    expect(code).toBe(0);
    expect(agent.lines.at(-1)?.msg).toBe('kubelet stopped');
  });
});

describe('kubelet-ts CLI flags', () => {
  it('prints its help from the repository root', async () => {
    const { stdout } = await run(join(repoRoot, 'node_modules/.bin/kubelet-ts'), ['--help'], { cwd: repoRoot });
    for (const flag of ['--config', '--hostname-override', '--runtime', '--sync-frequency', '--file-check-frequency'])
      expect(stdout).toContain(flag);
  });

  it.each([
    [['--sync-frequency', '10x'], 'invalid duration "10x"'],
    [['--runtime', 'podman'], 'Allowed choices are docker, cri, memory, auto'],
    [['--no-such-flag'], "unknown option '--no-such-flag'"],
  ])('refuses %j with a clear message', async (args, message) => {
    const failure = await run(process.execPath, [cliPath, ...args], { cwd: repoRoot }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure?.code).not.toBe(0);
    expect(failure?.stderr).toContain(message);
  });

  it('keeps running with a missing --config path and stops on SIGINT', async () => {
    const agent = new AgentProcess([
      '--runtime',
      'memory',
      '--config',
      join(tmpdir(), 'kubelet-ts-no-such-dir'),
      '--sync-frequency',
      '200ms',
    ]);
    try {
      await agent.until(() => agent.lines.some((l) => l.msg === 'kubelet starting'), 'start');
      await new Promise((r) => setTimeout(r, 500));
      expect(agent.lines.filter((l) => l.level >= 40 && l['event'] !== undefined)).toEqual([]);
      const { code } = await agent.stop('SIGINT');
      expect(code).toBe(0);
    } finally {
      agent.kill();
    }
  });
});
