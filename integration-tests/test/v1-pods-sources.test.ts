import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_NETWORK_SANDBOX_HASH, Labels, type ManifestSource } from '@kubelet-ts/core';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { EtcdManifestSource } from '@kubelet-ts/source-etcd';
import { FileManifestSource } from '@kubelet-ts/source-file';
import { HttpManifestSource } from '@kubelet-ts/source-http';
import { ServerManifestSource } from '@kubelet-ts/source-server';
import { EtcdServer, HttpFileServer } from '@kubelet-ts/testkit';
import { stringify } from 'yaml';

// (StaticManifestSource takes domain manifests, not v1 Pod text: an embedder decodes with parseManifests first.)

/**
 * Kubernetes v1 Pods (issue 15) through every source into a running agent on the in-memory
 * runtime: what reaches the runtime, field by field — entrypoint and command, the CPU limit, a
 * port's host address, emptyDir and hostPath volumes (a DirectoryOrCreate one made on the host),
 * the namespace label, and a host-network sandbox that publishes nothing.
 */

let work: string;
let etcd: EtcdServer;
let http: HttpFileServer;
let kubelet: Kubelet | undefined;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kubelet-ts-v1-sources-'));
  etcd = await EtcdServer.launch();
  http = await HttpFileServer.start();
});

afterEach(async () => {
  await kubelet?.close();
  kubelet = undefined;
});

afterAll(async () => {
  await http?.stop();
  await etcd?.destroy();
  await rm(work, { recursive: true, force: true });
});

let runs = 0;

/** A v1 Pod with every field this issue runs; its hostPath directory is new for each run. */
function webPod(hostDir: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'team-a', labels: { app: 'web' } },
    spec: {
      volumes: [
        { name: 'data', emptyDir: {} },
        { name: 'host', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } },
      ],
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          command: ['sh', '-c'],
          args: ['exec sleep 3600'],
          resources: { limits: { cpu: '250m' } },
          ports: [{ containerPort: 8080, hostPort: 18080, hostIP: '127.0.0.1' }],
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'host', mountPath: '/host' },
          ],
        },
        {
          name: 'side',
          image: 'busybox:1.36',
          args: ['sleep', '3600'],
          volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
        },
      ],
    },
  };
}

const nodeAgentPod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'node-agent' },
  spec: {
    hostNetwork: true,
    containers: [{ name: 'agent', image: 'busybox:1.36', command: ['httpd', '-f', '-p', '19100'], ports: [{ containerPort: 19100 }] }],
  },
};

type Feed = (pod: object) => Promise<ManifestSource>;

const SOURCES: ReadonlyArray<[string, Feed]> = [
  [
    'file (YAML)',
    async (pod) => {
      const path = join(work, `run-${++runs}.yaml`);
      await writeFile(path, stringify(pod));
      return new FileManifestSource({ path, allowHostMounts: true, allowHostNetwork: true });
    },
  ],
  [
    'URL (JSON)',
    async (pod) => {
      const path = `/run-${++runs}/pod.json`;
      const url = await http.put(path, JSON.stringify(pod));
      return new HttpManifestSource({ url, allowHostMounts: true, allowHostNetwork: true });
    },
  ],
  [
    'etcd',
    async (pod) => {
      const source = new EtcdManifestSource({
        endpoints: [etcd.endpoint],
        hostname: `v1-${++runs}`,
        allowHostMounts: true,
        allowHostNetwork: true,
      });
      const b64 = (s: string) => Buffer.from(s).toString('base64');
      await etcd.gateway('/v3/kv/put', { key: b64(source.key), value: b64(JSON.stringify([pod])) });
      return source;
    },
  ],
  [
    'server POST',
    async (pod) => {
      // Host networking allowed: the server then authenticates every caller, loopback included.
      const source = new ServerManifestSource({ port: 0, allowHostMounts: true, allowHostNetwork: true, authToken: 'v1-token' });
      return {
        name: source.name,
        start: async (sink) => {
          await source.start(sink);
          const res = await fetch(`${source.url}/container`, {
            method: 'POST',
            body: JSON.stringify(pod),
            headers: { 'content-type': 'application/json', authorization: 'Bearer v1-token' },
          });
          if (res.status !== 201) throw new Error(`POST /container: ${res.status} ${await res.text()}`);
        },
        close: () => source.close(),
      };
    },
  ],
];

async function until(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs an agent on `runtime` fed by `source` until its one pod runs every container; returns it. */
async function runPod(runtime: MemoryRuntime, source: ManifestSource, containers: number) {
  kubelet = createKubelet({
    runtime,
    sources: [source],
    hostname: 'v1-node',
    syncFrequencyMs: 200,
    allowHostMounts: true,
    allowHostNetwork: true,
  });
  await kubelet.start();
  const agent = kubelet;
  await until(async () => {
    const pods = await agent.pods();
    return pods.length === 1 && pods[0]!.containers.length === containers && pods[0]!.containers.every((c) => c.state === 'running');
  }, 'the pod running');
  expect(agent.status().sources[0]?.lastError).toBeUndefined();
  return (await agent.pods())[0]!;
}

describe.each(SOURCES)('v1 Pods through the %s source', (_name, feed) => {
  it('runs a v1 Pod with entrypoint, args, a CPU limit, a hostIP, emptyDir and a DirectoryOrCreate hostPath', async () => {
    const hostDir = join(work, `host-${++runs}`, 'made');
    const runtime = new MemoryRuntime({ images: ['busybox:1.36'] });
    const pod = await runPod(runtime, await feed(webPod(hostDir)), 2);
    expect(pod.id).toBe('web.team-a');
    expect((await stat(hostDir)).isDirectory()).toBe(true);
    const specOf = async (name: string) => (await kubelet!.containerInfo(pod.containers.find((c) => c.name === name)!.id!))!.spec;

    const main = await specOf('main');
    expect(main.entrypoint).toEqual(['sh', '-c']);
    expect(main.command).toEqual(['exec sleep 3600']);
    expect(main.cpuLimitMillis).toBe(250);
    expect(main.ports).toEqual([{ containerPort: 8080, hostPort: 18080, hostIp: '127.0.0.1', protocol: 'TCP' }]);
    expect(main.mounts).toEqual([
      { volume: 'data', containerPath: '/data', readOnly: false },
      { volume: 'host', containerPath: '/host', readOnly: false, hostPath: hostDir, hostPathType: 'DirectoryOrCreate' },
    ]);
    expect(main.labels[Labels.namespace]).toBe('team-a');
    const side = await specOf('side');
    expect(side.entrypoint).toBeUndefined();
    expect(side.command).toEqual(['sleep', '3600']);
    expect(side.mounts).toEqual([{ volume: 'data', containerPath: '/data', readOnly: true }]);

    const [sandbox] = runtime.sandboxSnapshot();
    const sandboxSpec = runtime.sandboxSpecOf(sandbox!.id);
    expect(sandboxSpec.ports).toEqual([{ containerPort: 8080, hostPort: 18080, hostIp: '127.0.0.1', protocol: 'TCP' }]);
    expect(sandboxSpec.hostNetwork).toBeUndefined();
    expect(sandboxSpec.labels[Labels.namespace]).toBe('team-a');
  });

  it('runs a hostNetwork v1 Pod in a host-network sandbox that publishes nothing', async () => {
    const runtime = new MemoryRuntime({ images: ['busybox:1.36'] });
    const pod = await runPod(runtime, await feed(nodeAgentPod), 1);
    expect(pod.id).toBe('node-agent');
    const [sandbox] = runtime.sandboxSnapshot();
    expect(runtime.sandboxSpecOf(sandbox!.id)).toMatchObject({ hostNetwork: true, ports: [] });
    expect(sandbox!.labels[Labels.sandboxHash]).toBe(HOST_NETWORK_SANDBOX_HASH);
    const spec = (await kubelet!.containerInfo(pod.containers[0]!.id!))!.spec;
    expect(spec.entrypoint).toEqual(['httpd', '-f', '-p', '19100']);
    expect(spec.command).toBeUndefined();
  });
});
