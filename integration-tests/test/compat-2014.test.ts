import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedManifestId, type ContainerManifest, type ManifestSource, type Mount, type PortBinding } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { EtcdManifestSource } from '@kubelet-ts/source-etcd';
import { FileManifestSource } from '@kubelet-ts/source-file';
import { HttpManifestSource } from '@kubelet-ts/source-http';
import { ServerManifestSource } from '@kubelet-ts/source-server';
import { EtcdServer, HttpFileServer } from '@kubelet-ts/testkit';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from './agent-process.js';

/**
 * What 2014 users wrote (the container-agent's examples in YAML and JSON, a salt-style
 * `cadvisor.manifest`, the late-2014 spellings), through every source into a running agent on the
 * in-memory runtime: the pods that result, container by container. The fixtures are core's.
 */
const FIXTURES = join(repoRoot, 'packages/manifest/test/fixtures/2014');

interface ExpectedContainer {
  readonly image: string;
  readonly command?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly mounts?: readonly Mount[];
  readonly ports?: readonly PortBinding[];
}
interface Fixture {
  readonly file: string;
  /** The id the manifest gives, if it gives one. */
  readonly id?: string;
  readonly containers: Readonly<Record<string, ExpectedContainer>>;
}

const tcp = (containerPort: number, hostPort?: number): PortBinding => ({
  containerPort,
  ...(hostPort === undefined ? {} : { hostPort }),
  protocol: 'TCP',
});
const AGENT_EXAMPLE: Fixture['containers'] = {
  container1: {
    image: 'foo/bar',
    command: ['/bin/echo', "'12345' '6789'"],
    env: { VAR1: 'value', VAR2: 'value' },
    mounts: [
      { volume: 'vol1', containerPath: '/mnt/vol1', readOnly: true },
      { volume: 'vol2', containerPath: '/mnt/vol2', readOnly: false },
    ],
    ports: [tcp(80, 80), tcp(81, 81)],
  },
};
const CASES: readonly Fixture[] = [
  { file: 'container-agent-example.yaml', containers: AGENT_EXAMPLE },
  { file: 'container-agent-example.json', containers: AGENT_EXAMPLE },
  {
    file: 'container-agent-registry.yaml',
    containers: {
      registry: { image: 'google/docker-registry', env: { GCS_BUCKET: 'my-private-repository-bucket' }, ports: [tcp(5000, 5000)] },
      'my-private-app': { image: 'localhost:5000/my/app', ports: [tcp(8080, 80)] },
    },
  },
  {
    file: 'container-agent-volumes.yaml',
    containers: {
      'data-loader': { image: 'data-loader', mounts: [{ volume: 'data', containerPath: '/mnt/data', readOnly: false }] },
      server: { image: 'data-server', mounts: [{ volume: 'data', containerPath: '/mnt/data', readOnly: false }], ports: [tcp(80, 80)] },
    },
  },
  {
    file: 'cadvisor.manifest',
    id: 'cadvisor-agent',
    containers: {
      cadvisor: {
        image: 'google/cadvisor:latest',
        ports: [tcp(8080, 4194)],
        mounts: [
          { volume: 'varrun', containerPath: '/var/run', readOnly: false, hostPath: '/var/run' },
          { volume: 'varlibdocker', containerPath: '/var/lib/docker', readOnly: true, hostPath: '/var/lib/docker' },
          { volume: 'cgroups', containerPath: '/sys/fs/cgroup', readOnly: true, hostPath: '/sys/fs/cgroup' },
        ],
      },
    },
  },
  {
    file: 'late-2014.json',
    id: 'monitoring.kube-system.example.com',
    containers: {
      collector: {
        image: 'example/collector:0.9',
        env: { MODE: 'agent' },
        ports: [{ containerPort: 8125, hostPort: 8125, protocol: 'UDP' }, tcp(9102)],
      },
    },
  },
];

/** A source holding one fixture, and the id its pod must get (a pattern where the source derives it). */
interface Fed {
  readonly source: ManifestSource;
  readonly id: string | RegExp;
}
type Feed = (fixture: Fixture, text: string) => Promise<Fed>;

let work: string;
let etcd: EtcdServer;
let http: HttpFileServer;
let kubelet: Kubelet | undefined;
const closing: Array<() => Promise<void>> = [];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kubelet-ts-compat-2014-'));
  etcd = await EtcdServer.launch();
  http = await HttpFileServer.start();
});

afterEach(async () => {
  await kubelet?.close();
  kubelet = undefined;
  for (const close of closing.splice(0)) await close();
});

afterAll(async () => {
  await http?.stop();
  await etcd?.destroy();
  await rm(work, { recursive: true, force: true });
});

let runs = 0;
/** A directory of this run's own. */
const fresh = async () => mkdtemp(join(work, `run-${++runs}-`));
const objectOf = (fixture: Fixture, text: string): Record<string, unknown> =>
  fixture.file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
const derivedPattern = (name: string) => new RegExp(`^${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-[0-9a-f]{12}$`);

const SOURCES: ReadonlyArray<[string, Feed]> = [
  [
    'file',
    async (fixture, text) => {
      const path = join(await fresh(), fixture.file);
      await writeFile(path, text);
      return { source: new FileManifestSource({ path, allowHostMounts: true }), id: fixture.id ?? derivedManifestId(fixture.file, path) };
    },
  ],
  [
    'directory',
    async (fixture, text) => {
      const dir = await fresh();
      await writeFile(join(dir, fixture.file), text);
      await writeFile(join(dir, `${fixture.file}~`), 'an editor backup, never read');
      return {
        source: new FileManifestSource({ path: dir, allowHostMounts: true }),
        id: fixture.id ?? derivedManifestId(fixture.file, join(dir, fixture.file)),
      };
    },
  ],
  [
    'URL',
    async (fixture, text) => {
      const path = `/run-${++runs}/${fixture.file}`;
      const url = await http.put(path, text);
      return {
        source: new HttpManifestSource({ url, allowHostMounts: true }),
        id: fixture.id ?? derivedPattern(fixture.file),
      };
    },
  ],
  [
    'etcd list',
    async (fixture, text) => {
      const source = new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname: `compat-${++runs}`, allowHostMounts: true });
      const b64 = (s: string) => Buffer.from(s).toString('base64');
      await etcd.gateway('/v3/kv/put', { key: b64(source.key), value: b64(JSON.stringify([objectOf(fixture, text)])) });
      return { source, id: fixture.id ?? derivedManifestId('etcd', source.key, 0) };
    },
  ],
  [
    'server POST',
    async (fixture, text) => {
      const source = new ServerManifestSource({ port: 0, allowHostMounts: true });
      const id = fixture.id ?? `posted-${++runs}`;
      return { source: postAfterStart(source, { id, ...objectOf(fixture, text) }), id };
    },
  ],
  [
    'StaticManifestSource',
    async (fixture, text) => {
      const source = new StaticManifestSource('embedded', [objectOf(fixture, text) as unknown as ContainerManifest], {
        allowHostMounts: true,
      });
      return { source, id: fixture.id ?? derivedManifestId('embedded', 'static source "embedded"', 0) };
    },
  ],
];

/** The server source, posting `manifest` to itself once it listens (a server is fed by requests). */
function postAfterStart(source: ServerManifestSource, manifest: object): ManifestSource {
  return {
    name: source.name,
    start: async (sink) => {
      await source.start(sink);
      const res = await fetch(`${source.url}/container`, {
        method: 'POST',
        body: JSON.stringify(manifest),
        headers: { 'content-type': 'application/json' },
      });
      if (res.status !== 201) throw new Error(`POST /container: ${res.status} ${await res.text()}`);
    },
    close: () => source.close(),
  };
}

async function until(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs an agent on `runtime` fed by `source` until its one pod runs every container; returns it. */
async function runPod(runtime: MemoryRuntime, source: ManifestSource, containers: number) {
  kubelet = createKubelet({ runtime, sources: [source], hostname: 'compat-node', syncFrequencyMs: 200 });
  await kubelet.start();
  const agent = kubelet;
  await until(async () => {
    const pods = await agent.pods();
    return pods.length === 1 && pods[0]!.containers.length === containers && pods[0]!.containers.every((c) => c.state === 'running');
  }, 'the pod running');
  return (await agent.pods())[0]!;
}

describe.each(SOURCES)('2014 manifests through the %s source', (_name, feed) => {
  it.each(CASES)('$file runs as the pod it describes', async (fixture) => {
    const text = await readFile(join(FIXTURES, fixture.file), 'utf8');
    const { source, id } = await feed(fixture, text);
    const runtime = new MemoryRuntime();
    const pod = await runPod(runtime, source, Object.keys(fixture.containers).length);
    if (typeof id === 'string') expect(pod.id).toBe(id);
    else expect(pod.id).toMatch(id);
    for (const view of pod.containers) {
      const expected = fixture.containers[view.name];
      expect(expected).toBeDefined();
      const { spec } = (await kubelet!.containerInfo(view.id!))!;
      expect(spec.podId).toBe(pod.id);
      expect(spec.image).toBe(expected!.image);
      expect(spec.command).toEqual(expected!.command);
      expect(spec.env).toEqual(expected!.env ?? {});
      expect(spec.mounts).toEqual(expected!.mounts ?? []);
      expect(spec.ports).toEqual(expected!.ports ?? []);
    }
    expect(kubelet!.status().sources[0]?.lastError).toBeUndefined();
  });
});

describe('2014 manifests: what stays as it is', () => {
  it('an id-less file keeps its pod across an agent restart: no container is made again', async () => {
    const dir = await fresh();
    await writeFile(join(dir, 'example.manifest'), await readFile(join(FIXTURES, 'container-agent-example.yaml')));
    const runtime = new MemoryRuntime();
    const first = await runPod(runtime, new FileManifestSource({ path: dir }), 1);
    await kubelet!.close();
    const second = await runPod(runtime, new FileManifestSource({ path: dir }), 1);
    expect(second.id).toBe(first.id);
    expect(second.containers[0]!.id).toBe(first.containers[0]!.id);
    expect(runtime.callCount('create')).toBe(1);
  });

  it('two id-less files of one directory run as two pods', async () => {
    const dir = await fresh();
    for (const name of ['a.manifest', 'b.manifest'])
      await writeFile(join(dir, name), 'version: v1beta1\ncontainers: [{name: main, image: "busybox:1.36"}]\n');
    kubelet = createKubelet({
      runtime: new MemoryRuntime(),
      sources: [new FileManifestSource({ path: dir })],
      hostname: 'compat-node',
      syncFrequencyMs: 200,
    });
    await kubelet.start();
    const agent = kubelet;
    await until(async () => (await agent.pods()).filter((p) => p.containers[0]?.state === 'running').length === 2, 'two pods running');
    expect((await agent.pods()).map((p) => p.id).sort()).toEqual(
      [derivedManifestId('a.manifest', join(dir, 'a.manifest')), derivedManifestId('b.manifest', join(dir, 'b.manifest'))].sort(),
    );
  });

  it('a pod with no containers is accepted and runs nothing', async () => {
    const runtime = new MemoryRuntime();
    const pod = await runPod(
      runtime,
      new StaticManifestSource('embedded', [{ version: 'v1beta1', id: 'empty', containers: [] } as unknown as ContainerManifest]),
      0,
    );
    expect(pod).toMatchObject({ id: 'empty', containers: [] });
    expect(kubelet!.status().sources[0]?.lastError).toBeUndefined();
    expect(runtime.callCount('create')).toBe(0);
  });

  it('the server still refuses a manifest without an id with a 400 naming id', async () => {
    const server = new ServerManifestSource({ port: 0 });
    closing.push(() => server.close());
    await server.start({ update: () => {}, error: () => {} });
    const text = await readFile(join(FIXTURES, 'container-agent-example.json'), 'utf8');
    const res = await fetch(`${server.url}/container`, { method: 'POST', body: text, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { fieldErrors: unknown }).fieldErrors).toEqual([{ path: 'id', message: 'is required' }]);
  });
});
