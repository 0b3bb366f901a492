import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, type ResourceUsage } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler, renderSummary } from '@kubelet-ts/source-server';
import { topMain } from '../src/top.js';

const MI = 1024 * 1024;

/** `kubelet-ts top` in this process, its output kept. */
async function top(args: readonly string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await topMain(args, { stdout, stderr, env: {} });
  return { code, stdout: out, stderr: err };
}

const figures = (nanoCores: number | undefined, workingSetMi: number) => ({
  cpu: { usageNanoseconds: 1e9, ...(nanoCores === undefined ? {} : { usageNanoCores: nanoCores }) },
  memory: { usageBytes: workingSetMi * MI, workingSetBytes: workingSetMi * MI },
});
const container = (name: string, nanoCores: number | undefined, mi: number) => ({
  name,
  id: name,
  startTime: 0,
  timestamp: 0,
  ...figures(nanoCores, mi),
});

/** Two pods in two namespaces (one container too new for a rate), and the node. */
const USAGE: ResourceUsage = {
  nodeName: 'node-1',
  node: {
    timestamp: 0,
    startTime: 0,
    cpu: { usageNanoseconds: 1e12, usageNanoCores: 1_234_500_000 },
    memory: { usageBytes: 8 * 1024 * MI, workingSetBytes: 2048 * MI, availableBytes: 6144 * MI },
    network: [],
  },
  pods: [
    {
      namespace: 'default',
      name: 'web',
      uid: 'u1',
      startTime: 0,
      timestamp: 0,
      containers: [container('nginx', 250_000_000, 20), container('sidecar', undefined, 5)],
      ...figures(undefined, 25),
    },
    {
      namespace: 'shop',
      name: 'db',
      uid: 'u2',
      startTime: 0,
      timestamp: 0,
      containers: [container('postgres', 1_500_000, 300)],
      ...figures(1_500_000, 300),
    },
  ],
};

describe('kubelet-ts top, against a server answering the Summary API', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url !== '/stats/summary') return res.writeHead(404).end('no such route');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(renderSummary(USAGE)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("prints the namespace's pods as kubectl top does: millicores and MiB of working set, '-' without a rate yet", async () => {
    expect(await top(['pods', '--server', url])).toEqual({
      code: 0,
      stdout: 'NAME   CPU(cores)   MEMORY(bytes)\nweb    -            25Mi\n',
      stderr: '',
    });
    expect((await top(['pod', '-n', 'shop', '--server', url])).stdout).toBe(
      'NAME   CPU(cores)   MEMORY(bytes)\ndb     2m           300Mi\n',
    );
  });

  it('every namespace with -A, each container with --containers, largest first with --sort-by', async () => {
    expect((await top(['pods', '-A', '--sort-by', 'memory', '--server', url])).stdout).toBe(
      [
        'NAMESPACE   NAME   CPU(cores)   MEMORY(bytes)',
        'shop        db     2m           300Mi',
        'default     web    -            25Mi',
        '',
      ].join('\n'),
    );
    expect((await top(['pods', '--containers', '--sort-by', 'cpu', '--server', url])).stdout).toBe(
      ['POD   NAME      CPU(cores)   MEMORY(bytes)', 'web   nginx     250m         20Mi', 'web   sidecar   -            5Mi', ''].join(
        '\n',
      ),
    );
  });

  it('prints the node with the share of its memory in use', async () => {
    expect((await top(['node', '--server', url])).stdout).toBe(
      'NAME     CPU(cores)   MEMORY(bytes)   MEMORY%\nnode-1   1235m        2048Mi          25%\n',
    );
  });

  it('says so when a namespace has no pods running, and refuses what it cannot show', async () => {
    expect(await top(['pods', '-n', 'empty', '--server', url])).toEqual({
      code: 0,
      stdout: '',
      stderr: 'No pods are running in namespace empty\n',
    });
    expect(await top(['deployments', '--server', url])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'kubelet-ts top: unknown resource "deployments": use "pods" or "node"\n',
    });
    const refused = await top(['pods', '--sort-by', 'disk', '--server', url]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("argument 'disk' is invalid. Allowed choices are cpu, memory.");
  });

  it('says what went wrong when no agent answers', async () => {
    const down = await top(['pods', '--server', 'http://127.0.0.1:1']);
    // Exit 2: the agent cannot be reached (was 1 before the client commands had exit codes of their own).
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/^kubelet-ts top: .*127\.0\.0\.1:1/);
  });
});

describe('kubelet-ts top, against a running agent on the in-memory runtime', () => {
  let runtime: MemoryRuntime;
  let server: ServerManifestSource;
  let kubelet: Kubelet;

  beforeAll(async () => {
    runtime = new MemoryRuntime();
    server = new ServerManifestSource({ port: 0 });
    const pods = new StaticManifestSource('pods', [
      checkedManifest({ version: 'v1beta1', id: 'web', containers: [{ name: 'main', image: 'busybox:1.36' }] }),
    ]);
    kubelet = createKubelet({ runtime, sources: [pods, server], hostname: 'top-node', housekeeping: { intervalMs: 50 } });
    server.mount(agentApiHandler(kubelet));
    await kubelet.start();
    await kubelet.sync();
  });
  afterAll(async () => {
    await kubelet.close();
    await server.close();
  });

  it("shows the pod's working set and a rate once two samples have it", async () => {
    const id = runtime.snapshot().find((c) => c.state === 'running' && c.labels[Labels.manifestId] === 'web')!.id;
    runtime.setStats(id, { cpuNs: 5e9, memoryBytes: 40 * MI, workingSetBytes: 32 * MI });
    const deadline = Date.now() + 5_000;
    let shown = await top(['pods', '--server', server.url]);
    while (!shown.stdout.includes('0m') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      shown = await top(['pods', '--server', server.url]);
    }
    // Its CPU time stands still between samples: 0 millicores.
    expect(shown).toEqual({ code: 0, stdout: 'NAME   CPU(cores)   MEMORY(bytes)\nweb    0m           32Mi\n', stderr: '' });
  });
});
