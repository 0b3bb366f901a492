import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Labels } from '@kubelet-ts/core';
import { buildTestImages, removeLabelled, type TestImages } from '@kubelet-ts/testkit';
import { AgentProcess, cliPath, repoRoot } from './agent-process.js';

const run = promisify(execFile);

/** Runs `kubelet-ts plan …` and returns its exit code and output (it exits 2 when there is work). */
async function plan(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cliPath, 'plan', ...args], { cwd: repoRoot, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const manifest = (image: string) =>
  JSON.stringify({
    id: 'web',
    containers: [{ name: 'main', image, command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'] }],
  });

describe('kubelet-ts plan against a real engine', () => {
  const node = `plan-e2e-${process.pid}`;
  let images: TestImages;
  let dir: string;
  let volumes: string;
  let flags: string[];

  beforeAll(async () => {
    images = await buildTestImages();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-plan-'));
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-plan-volumes-'));
    await writeFile(join(dir, 'web.json'), manifest(images.busybox));
    flags = [
      '--runtime',
      'docker',
      '--config',
      dir,
      '--hostname-override',
      node,
      '--pod-infra-image',
      images.pause,
      '--host-ip',
      '127.0.0.1',
      '--volumes-root',
      volumes,
    ];
  });

  afterAll(async () => {
    await removeLabelled(`${Labels.node}=${node}`);
    await rm(dir, { recursive: true, force: true });
    await rm(volumes, { recursive: true, force: true });
  });

  it('prints what a pass would do and exits 2 when there is work, touching nothing', async () => {
    const result = await plan(flags);
    expect(result.code).toBe(2);
    expect(/web\/main\s+create\s+new\s+image (\S+)/.exec(result.stdout)?.[1]).toBe(images.busybox);
  });

  it('exits 0 on a host in sync, and names the changed container with its reason', async () => {
    const agent = new AgentProcess([...flags, '--sync-frequency', '1s']);
    try {
      await agent.until(() => agent.events('ContainerStarted', 'web').length === 1, 'web started', 30_000);
      const { code } = await agent.stop();
      expect(code).toBe(0);
    } finally {
      agent.kill();
    }
    const inSync = await plan(flags);
    expect(inSync.code).toBe(0);
    expect(inSync.stdout).toContain('in sync, nothing to do');

    await writeFile(join(dir, 'web.json'), manifest(images.pause));
    const changed = await plan([...flags, '--output', 'json']);
    expect(changed.code).toBe(2);
    const report = JSON.parse(changed.stdout) as { steps: Array<{ action: string; reason: string; container: string }> };
    expect(report.steps.map((s) => `${s.action}:${s.reason}`)).toEqual(['stop:spec-changed', 'remove:spec-changed', 'create:spec-changed']);
  });

  it('exits 1 and prints every field error when a source refused a manifest (never "in sync")', async () => {
    const bad = await mkdtemp(join(tmpdir(), 'kubelet-ts-plan-bad-'));
    try {
      await writeFile(
        join(bad, 'bad.yaml'),
        'id: Bad_Id\ncontainers:\n  - name: main\n    image: app:1\n    ports: [{ containerPort: 70000 }]\n',
      );
      const text = await plan(['--runtime', 'memory', '--config', bad, '--hostname-override', node]);
      expect(text.code).toBe(1);
      expect(text.stdout).toContain('rejected: 1 manifest');
      expect(text.stdout).toMatch(/^\s+id: must be a DNS subdomain/m);
      expect(text.stdout).toMatch(/^\s+containers\[0\]\.ports\[0\]\.containerPort: /m);
      const json = await plan(['--runtime', 'memory', '--config', bad, '--hostname-override', node, '--output', 'json']);
      expect(json.code).toBe(1);
      const report = JSON.parse(json.stdout) as {
        inSync: boolean;
        rejected: Array<{ source: string; fieldErrors: Array<{ path: string }> }>;
      };
      expect(report.rejected).toHaveLength(1);
      expect(report.rejected[0]!.fieldErrors.map((f) => f.path)).toEqual(['id', 'containers[0].ports[0].containerPort']);
    } finally {
      await rm(bad, { recursive: true, force: true });
    }
  });

  it('exits 1 when it cannot plan', async () => {
    const result = await plan(['--runtime', 'docker', '--docker-host', 'unix:///tmp/kubelet-ts-no-engine.sock', '--config', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no Docker engine answers');
  });

  it('exits 1 naming a --config path that is not there (never "in sync" of nothing)', async () => {
    const missing = join(dir, 'no-such-manifest.yaml');
    const result = await plan(['--runtime', 'memory', '--config', missing]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`--config ${missing}: no such file or directory`);
  });
});

describe('a running agent’s /plan and /metrics', () => {
  let dir: string;
  let agent: AgentProcess;
  let url: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-metrics-'));
    await writeFile(join(dir, 'a.json'), JSON.stringify({ id: 'a', containers: [{ name: 'main', image: 'busybox:1.36' }] }));
    agent = new AgentProcess(['--runtime', 'memory', '--config', dir, '--hostname-override', 'metrics', '--sync-frequency', '1s']);
    url = await agent.serverUrl();
    await agent.until(() => agent.events('ContainerStarted', 'a').length === 1, 'a started');
  });

  afterAll(async () => {
    agent.kill();
    await agent.exit;
    await rm(dir, { recursive: true, force: true });
  });

  it('serves GET /plan: in sync once the pass has run', async () => {
    const report = (await (await fetch(`${url}/plan`)).json()) as { inSync: boolean; steps: unknown[] };
    expect(report).toMatchObject({ inSync: true, steps: [] });
  });

  it('serves Prometheus metrics: passes, runtime calls, source updates, containers by state', async () => {
    const res = await fetch(`${url}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toMatch(/^kubelet_ts_sync_pass_duration_seconds_count [1-9]\d*$/m);
    expect(text).toMatch(/^kubelet_ts_runtime_call_duration_seconds_count\{operation="create"\} 1$/m);
    expect(text).toMatch(/^kubelet_ts_source_updates_total\{source="file"\} [1-9]\d*$/m);
    expect(text).toMatch(/^kubelet_ts_containers\{state="running"\} 1$/m);
    expect(text).toMatch(/^kubelet_ts_desired_pods 1$/m);
    expect(text).toContain('kubelet_ts_container_restarts_total 0');
  });
});
