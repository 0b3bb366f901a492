import { afterEach, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import type { ResourceUsage } from '@kubelet-ts/core';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler } from '../src/index.js';
import { FakeView } from './fake-view.js';

const T0 = Date.parse('2026-12-04T10:00:00Z');

/** One pod with two containers (the second too new for a CPU rate), and the node. */
const USAGE: ResourceUsage = {
  nodeName: 'node-1',
  node: {
    timestamp: T0,
    startTime: T0 - 3_600_000,
    cpu: { usageNanoseconds: 7_200e9, usageNanoCores: 350_000_000 },
    memory: {
      usageBytes: 8e9,
      limitBytes: 16e9,
      workingSetBytes: 6e9,
      availableBytes: 10e9,
      rssBytes: 3e9,
      pageFaults: 10,
      majorPageFaults: 1,
    },
    network: [
      { name: 'eth0', rxBytes: 100, rxErrors: 0, txBytes: 200, txErrors: 0 },
      { name: 'docker0', rxBytes: 5, rxErrors: 0, txBytes: 6, txErrors: 0 },
    ],
    fs: { timestamp: T0, availableBytes: 50, capacityBytes: 100, usedBytes: 40, inodes: 10, inodesFree: 4, inodesUsed: 6 },
    rlimit: { maxpid: 4_194_304, curproc: 321 },
  },
  pods: [
    {
      namespace: 'default',
      name: 'web',
      uid: 'uid-1',
      startTime: T0 - 60_000,
      timestamp: T0,
      containers: [
        {
          name: 'app',
          id: 'c1',
          startTime: T0 - 50_000,
          timestamp: T0,
          cpu: { usageNanoseconds: 1.5e9, usageNanoCores: 250_000_000 },
          memory: { usageBytes: 30 * 2 ** 20, workingSetBytes: 20 * 2 ** 20, limitBytes: 64 * 2 ** 20, rssBytes: 18 * 2 ** 20 },
          writableLayerBytes: 4096,
        },
        {
          name: 'side',
          id: 'c2',
          startTime: T0 - 5_000,
          timestamp: T0 - 1,
          cpu: { usageNanoseconds: 0.5e9 },
          memory: { usageBytes: 2 ** 20, workingSetBytes: 2 ** 20 },
        },
      ],
      cpu: { usageNanoseconds: 2e9 },
      memory: { usageBytes: 31 * 2 ** 20, workingSetBytes: 21 * 2 ** 20 },
      network: { name: 'eth0', rxBytes: 1_000, rxErrors: 0, txBytes: 2_000, txErrors: 1 },
      volumes: [
        {
          name: 'cache',
          timestamp: T0,
          usedBytes: 8192,
          inodesUsed: 2,
          capacityBytes: 1e9,
          availableBytes: 6e8,
          inodes: 1000,
          inodesFree: 900,
        },
        {
          name: 'data',
          timestamp: T0,
          usedBytes: 4096,
          inodesUsed: 1,
          capacityBytes: 1e9,
          availableBytes: 6e8,
          claim: { name: 'db-data', namespace: 'default' },
        },
      ],
    },
  ],
};

let source: ServerManifestSource | undefined;
afterEach(async () => {
  await source?.close();
  source = undefined;
});

async function start(usage: ResourceUsage): Promise<string> {
  const view = new FakeView();
  view.usage = usage;
  source = new ServerManifestSource({ port: 0 });
  source.mount(agentApiHandler(view));
  await source.start(new RecordingSink());
  return source.url;
}

/** Runs a program that is not ours on `input`; fails saying how to install it when it is missing. */
function run(program: string, args: readonly string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      program,
      [...args],
      { timeout: 30_000, env: { ...process.env, KUBECONFIG: '/dev/null' } },
      (error, stdout, stderr) => {
        if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT')
          return reject(
            new Error(
              `${program} is not on PATH: apt-get install ${program === 'promtool' ? 'prometheus' : 'kubernetes-client'} (npm test installs it)`,
            ),
          );
        resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

describe('/metrics/resource', () => {
  it("serves the kubelet's families with their labels, every sample stamped with the time it was taken (ms)", async () => {
    const url = await start(USAGE);
    const res = await fetch(`${url}/metrics/resource`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const lines = (await res.text()).split('\n');
    const where = 'container="app",namespace="default",pod="web"';
    expect(lines).toEqual(
      expect.arrayContaining([
        '# TYPE container_cpu_usage_seconds_total counter',
        `container_cpu_usage_seconds_total{${where}} 1.5 ${T0}`,
        `container_memory_working_set_bytes{${where}} ${20 * 2 ** 20} ${T0}`,
        `container_start_time_seconds{${where}} ${(T0 - 50_000) / 1000} ${T0 - 50_000}`,
        `container_cpu_usage_seconds_total{container="side",namespace="default",pod="web"} 0.5 ${T0 - 1}`,
        `node_cpu_usage_seconds_total 7200 ${T0}`,
        `node_memory_working_set_bytes 6000000000 ${T0}`,
        `pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2 ${T0}`,
        `pod_memory_working_set_bytes{namespace="default",pod="web"} ${21 * 2 ** 20} ${T0}`,
        '# TYPE resource_scrape_error gauge',
        'resource_scrape_error 0',
      ]),
    );
  });

  it('passes promtool check metrics (the exposition as Prometheus reads it)', async () => {
    const url = await start(USAGE);
    const body = await (await fetch(`${url}/metrics/resource`)).text();
    const lint = await run('promtool', ['check', 'metrics'], body);
    expect(lint).toMatchObject({ code: 0, stderr: '' });
  });

  it('before the first sample: every family with no samples, and no error; a failed sample says resource_scrape_error 1', async () => {
    let url = await start({ nodeName: 'node-1', node: undefined, pods: [] });
    let text = await (await fetch(`${url}/metrics/resource`)).text();
    expect(text).toContain('# TYPE node_cpu_usage_seconds_total counter\n# HELP node_memory_working_set_bytes');
    expect(text.split('\n').filter((l) => l !== '' && !l.startsWith('#'))).toEqual(['resource_scrape_error 0']);
    await source!.close();
    url = await start({ ...USAGE, pods: [], error: 'the runtime could not be reached' });
    text = await (await fetch(`${url}/metrics/resource`)).text();
    expect(text).toContain('\nresource_scrape_error 1\n');
    expect(text).toContain(`node_cpu_usage_seconds_total 7200 ${T0}`);
  });

  it('answers 405 to anything but GET', async () => {
    const url = await start(USAGE);
    for (const path of ['/metrics/resource', '/stats/summary', '/metrics/probes'])
      expect((await fetch(`${url}${path}`, { method: 'POST' })).status).toBe(405);
  });
});

describe('/stats/summary', () => {
  it("serves the Summary API in the kubelet's field names, read by kubectl get --raw", async () => {
    const url = await start(USAGE);
    const viaKubectl = await run('kubectl', ['get', '--raw', '/stats/summary', '--server', url]);
    expect(viaKubectl.code).toBe(0);
    const summary = JSON.parse(viaKubectl.stdout) as Record<string, unknown>;
    expect(summary).toEqual({
      node: {
        nodeName: 'node-1',
        startTime: '2026-12-04T09:00:00Z',
        cpu: { time: '2026-12-04T10:00:00Z', usageNanoCores: 350_000_000, usageCoreNanoSeconds: 7_200e9 },
        memory: {
          time: '2026-12-04T10:00:00Z',
          availableBytes: 10e9,
          usageBytes: 8e9,
          workingSetBytes: 6e9,
          rssBytes: 3e9,
          pageFaults: 10,
          majorPageFaults: 1,
        },
        network: {
          time: '2026-12-04T10:00:00Z',
          name: 'eth0',
          rxBytes: 100,
          rxErrors: 0,
          txBytes: 200,
          txErrors: 0,
          interfaces: USAGE.node!.network,
        },
        fs: {
          time: '2026-12-04T10:00:00Z',
          availableBytes: 50,
          capacityBytes: 100,
          usedBytes: 40,
          inodes: 10,
          inodesFree: 4,
          inodesUsed: 6,
        },
        rlimit: { time: '2026-12-04T10:00:00Z', maxpid: 4_194_304, curproc: 321 },
      },
      pods: [
        {
          podRef: { name: 'web', namespace: 'default', uid: 'uid-1' },
          startTime: '2026-12-04T09:59:00Z',
          containers: [
            {
              name: 'app',
              startTime: '2026-12-04T09:59:10Z',
              cpu: { time: '2026-12-04T10:00:00Z', usageNanoCores: 250_000_000, usageCoreNanoSeconds: 1.5e9 },
              memory: {
                time: '2026-12-04T10:00:00Z',
                // The limit less the working set, as the kubelet computes it for a container.
                availableBytes: 44 * 2 ** 20,
                usageBytes: 30 * 2 ** 20,
                workingSetBytes: 20 * 2 ** 20,
                rssBytes: 18 * 2 ** 20,
              },
              rootfs: { time: '2026-12-04T10:00:00Z', usedBytes: 4096 },
            },
            {
              name: 'side',
              startTime: '2026-12-04T09:59:55Z',
              // No rate yet: usageNanoCores is left out, as the kubelet does after one sample.
              cpu: { time: '2026-12-04T09:59:59Z', usageCoreNanoSeconds: 0.5e9 },
              memory: { time: '2026-12-04T09:59:59Z', usageBytes: 2 ** 20, workingSetBytes: 2 ** 20 },
            },
          ],
          cpu: { time: '2026-12-04T10:00:00Z', usageCoreNanoSeconds: 2e9 },
          memory: { time: '2026-12-04T10:00:00Z', usageBytes: 31 * 2 ** 20, workingSetBytes: 21 * 2 ** 20 },
          network: {
            time: '2026-12-04T10:00:00Z',
            name: 'eth0',
            rxBytes: 1_000,
            rxErrors: 0,
            txBytes: 2_000,
            txErrors: 1,
            interfaces: [USAGE.pods[0]!.network],
          },
          'ephemeral-storage': { time: '2026-12-04T10:00:00Z', usedBytes: 4096 },
          // The kubelet's VolumeStats: the file system's figures, the name, a claim as pvcRef.
          volume: [
            {
              time: '2026-12-04T10:00:00Z',
              usedBytes: 8192,
              inodesUsed: 2,
              capacityBytes: 1e9,
              availableBytes: 6e8,
              inodes: 1000,
              inodesFree: 900,
              name: 'cache',
            },
            {
              time: '2026-12-04T10:00:00Z',
              usedBytes: 4096,
              inodesUsed: 1,
              capacityBytes: 1e9,
              availableBytes: 6e8,
              name: 'data',
              pvcRef: { name: 'db-data', namespace: 'default' },
            },
          ],
        },
      ],
    });
  });

  it('before the first sample: the node by name, and no pods', async () => {
    const url = await start({ nodeName: 'node-1', node: undefined, pods: [] });
    expect(await (await fetch(`${url}/stats/summary`)).json()).toEqual({ node: { nodeName: 'node-1' }, pods: [] });
  });
});

describe('/metrics/probes', () => {
  it("serves the view's probe exposition with its content type", async () => {
    const url = await start(USAGE);
    const res = await fetch(`${url}/metrics/probes`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('prober_probe_total{probe_type="Liveness"} 1\n');
  });
});
