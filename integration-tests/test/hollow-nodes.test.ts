import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { until } from './cluster-helpers.js';
import { kubectlOk as kubectl } from './kubectl.js';

/**
 * `kubelet-ts hollow` (issue 46): N nodes of a cluster in one process on the in-memory runtime,
 * each a full agent, against the testkit's control plane: every Node registers Ready with its
 * Lease, the real scheduler spreads a Deployment over them and it becomes Available (each pod's
 * status written by its node), a scale to 0 removes the pods, and the process ends on SIGTERM.
 */

const CLI = fileURLToPath(new URL('../../packages/cli/bin/kubelet-ts.js', import.meta.url));
const NODES = 5;
const PREFIX = `hollow-${process.pid}-`;

describe('kubelet-ts hollow: nodes at scale in one process', () => {
  let cluster: StartedControlPlane;
  let hollow: ChildProcess | undefined;
  let exited: Promise<number | null> | undefined;
  let dir: string;
  const stderr: string[] = [];
  const k = (...args: string[]) => kubectl(cluster.kubeconfigPath, ...args);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-hollow-'));
    cluster = await startControlPlane();
    hollow = spawn(
      process.execPath,
      [CLI, 'hollow', '--nodes', String(NODES), '--kubeconfig', cluster.kubeconfigPath, '--name-prefix', PREFIX],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    hollow.stderr!.on('data', (c: Buffer) => stderr.push(c.toString()));
    exited = new Promise((resolve) => hollow!.once('exit', (code) => resolve(code)));
  }, 240_000);

  afterAll(async () => {
    if (hollow?.exitCode === null) {
      hollow.kill('SIGKILL');
      await exited;
    }
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('registers every node Ready, each holding its Lease', async () => {
    const ready = await until(
      `${NODES} hollow nodes Ready`,
      async () => {
        const out = await k(
          'get',
          'nodes',
          '-l',
          'kubelet-ts.io/hollow=true',
          '-o',
          'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}',
        );
        const names = out
          .trim()
          .split(' ')
          .filter((e) => e.endsWith('=True'));
        return names.length === NODES ? names.map((e) => e.split('=')[0]!).sort() : undefined;
      },
      90_000,
    );
    expect(ready).toEqual(Array.from({ length: NODES }, (_, i) => `${PREFIX}${i}`).sort());
    const leases = await k('get', 'leases', '-n', 'kube-node-lease', '-o', 'jsonpath={.items[*].spec.holderIdentity}');
    for (const name of ready) expect(leases.split(' ')).toContain(name);
  }, 120_000);

  it('runs a Deployment the scheduler spreads over them to Available, and scales it to 0', async () => {
    const file = join(dir, 'deployment.json');
    await writeFile(
      file,
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'spread', namespace: 'default' },
        spec: {
          replicas: 20,
          selector: { matchLabels: { app: 'spread' } },
          template: {
            metadata: { labels: { app: 'spread' } },
            spec: {
              automountServiceAccountToken: false,
              terminationGracePeriodSeconds: 1,
              containers: [{ name: 'main', image: 'registry.example/app:1', command: ['serve'] }],
            },
          },
        },
      }),
    );
    await k('apply', '-f', file);
    await k('rollout', 'status', 'deployment/spread', '--timeout=120s');
    const nodes = (await k('get', 'pods', '-l', 'app=spread', '-o', 'jsonpath={.items[*].spec.nodeName}')).split(' ');
    expect(nodes).toHaveLength(20);
    expect(new Set(nodes).size).toBeGreaterThan(1);
    for (const n of nodes) expect(n.startsWith(PREFIX)).toBe(true);
    const phases = (await k('get', 'pods', '-l', 'app=spread', '-o', 'jsonpath={.items[*].status.phase}')).split(' ');
    expect(new Set(phases)).toEqual(new Set(['Running']));
    await k('scale', 'deployment/spread', '--replicas=0');
    await until(
      'the pods gone',
      async () => ((await k('get', 'pods', '-l', 'app=spread', '-o', 'name')).trim() === '' ? true : undefined),
      60_000,
    );
  }, 180_000);

  it('ends on SIGTERM, exit 0', async () => {
    hollow!.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr.join('')).not.toMatch(/TypeError|unhandled/i);
  }, 60_000);
});
