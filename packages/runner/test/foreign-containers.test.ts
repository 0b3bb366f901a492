import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  Labels,
  buildContainerSpec,
  wrapRuntime,
  buildSandboxSpec,
  type ContainerManifest,
  type ContainerRuntime,
  type ContainerSpec,
} from '@kubelet-ts/core';
import { GuardedRuntime, checkedManifest, ManualClock } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler } from '@kubelet-ts/source-server';
import { Kubelet } from '../src/kubelet.js';
import { RecordingEventSink, ScriptedSource, settle } from './helpers.js';

const HOST = 'node-a';
const SYNC_MS = 10_000;

const web = (image = 'app:1') =>
  checkedManifest({
    id: 'web',
    containers: [
      { name: 'app', image },
      { name: 'probed', image: 'app:1', livenessProbe: { exec: { command: ['check'] }, periodSeconds: 1, failureThreshold: 1 } },
    ],
  });
const old = checkedManifest({ id: 'old', containers: [{ name: 'app', image: 'app:1' }] });

/**
 * The memory runtime listing as Docker does, without start and end times, so the agent has to
 * inspect exited containers (`withExitTimes`): one more path that acts on container ids.
 */
function listingWithoutTimes(runtime: MemoryRuntime): ContainerRuntime {
  return {
    ...wrapRuntime(runtime, {}),
    list: async (options) => (await runtime.list(options)).map(({ startedAt: _s, finishedAt: _f, ...c }) => c),
  };
}

/**
 * Foreign containers beside ours, on every path that lists containers or acts on their ids: the
 * sync pass (adoption, creation, crash restart, GC, spec change, removal of a pod), exit-time
 * lookups, liveness probes and their kills, containerInfo (also through the agent's server),
 * pods, plan, metrics and close. The runtime is wrapped in a GuardedRuntime that refuses and
 * records any call naming a foreign container; each test also shows that its path did act on ours.
 */
describe('foreign containers beside the agent', () => {
  let clock: ManualClock;
  let memory: MemoryRuntime;
  let guard: GuardedRuntime;
  let source: ScriptedSource;
  let server: ServerManifestSource;
  let kubelet: Kubelet;
  /** Every foreign container and its record before the agent started. */
  let foreign: Map<string, { name: string; state: string; startedAt: number | undefined }>;
  /** Every foreign sandbox (namespace holder) and its state before the agent started. */
  let foreignSandboxes: Map<string, { name: string; state: string }>;
  /** Our container of a pod no source asks for any more. */
  let stale: string;
  /** Our sandbox of web, and of that pod. */
  let webSandbox: string;
  let staleSandbox: string;

  async function place(spec: ContainerSpec, state: 'running' | 'exited', sandbox: string): Promise<string> {
    const created = await memory.create(spec, sandbox);
    await memory.start(created.id);
    if (state === 'exited') memory.exit(created.id, 1);
    return created.id;
  }

  const bare = (name: string, labels: Record<string, string>): ContainerSpec => ({
    name,
    podId: 'web',
    image: 'app:1',
    env: {},
    ports: [],
    mounts: [],
    labels,
  });
  const ourSpec = (m: ContainerManifest, container: string, node = HOST) =>
    buildContainerSpec(m, m.containers.find((c) => c.name === container)!, { node, source: 'a' });
  const ours = (podId: string, container: string) =>
    memory
      .snapshot()
      .filter(
        (c) =>
          c.labels[Labels.node] === HOST &&
          c.labels[Labels.manifestId] === podId &&
          c.labels[Labels.containerName] === container &&
          !foreign.has(c.id),
      );
  const runningOurs = (container: string) => {
    const found = ours('web', container).filter((c) => c.state === 'running');
    expect(found).toHaveLength(1);
    return found[0]!;
  };
  const called = (op: string, id: string) => guard.calls.some((c) => c.op === op && c.id === id);

  beforeEach(async () => {
    clock = new ManualClock(1_000_000);
    memory = new MemoryRuntime({ clock, images: ['app:1', 'app:2'] });
    const hash = ourSpec(web(), 'app').labels[Labels.specHash]!;
    // Namespace holders someone else made (issue 17: one labelled as ours was removed, a stopped
    // one was started and joined): labelled as ours with a name the agent never gives, with a hash
    // it never writes, stopped, and another agent's (its pods web and old); and one without any
    // of our labels, where the foreign containers below live.
    const ourWebSandbox = buildSandboxSpec(web(), { node: HOST, source: 'a' });
    const holders = [
      await memory.runSandbox({ ...ourWebSandbox, name: 'evil-holder' }),
      await memory.runSandbox({
        ...ourWebSandbox,
        name: 'POD--web--0badf00d',
        labels: { ...ourWebSandbox.labels, [Labels.sandboxHash]: 'garbage' },
      }),
      await memory.runSandbox({ ...ourWebSandbox, name: 'stopped-holder' }),
      await memory.runSandbox(buildSandboxSpec(web(), { node: 'node-b', source: 'a' })),
      await memory.runSandbox(buildSandboxSpec(old, { node: 'node-b', source: 'a' })),
      await memory.runSandbox({ name: 'their-holder', podId: 'web', hostname: 'web', ports: [], labels: {} }),
    ];
    const [theirs, nodeBWeb, nodeBOld] = [holders[5]!.id, holders[3]!.id, holders[4]!.id];
    const ids = [
      // Nothing of ours: not even listed by default.
      await place(bare('plain', {}), 'running', theirs),
      // Some of our keys, not all of them.
      await place(bare('partial', { [Labels.manifestId]: 'web', [Labels.node]: HOST }), 'running', theirs),
      await place(bare('no-hash', { [Labels.manifestId]: 'web', [Labels.containerName]: 'app', [Labels.node]: HOST }), 'exited', theirs),
      // All of our keys, with values the agent never writes.
      await place(
        bare('bad-hash', {
          [Labels.manifestId]: 'web',
          [Labels.containerName]: 'app',
          [Labels.specHash]: 'garbage',
          [Labels.node]: HOST,
          [Labels.restartCount]: 'many',
        }),
        'exited',
        theirs,
      ),
      await place(
        bare('bad-id', { [Labels.manifestId]: '../../etc', [Labels.containerName]: 'app', [Labels.specHash]: hash, [Labels.node]: HOST }),
        'running',
        theirs,
      ),
      await place(
        bare('bad-name', { [Labels.manifestId]: 'web', [Labels.containerName]: 'App\n', [Labels.specHash]: hash, [Labels.node]: HOST }),
        'running',
        theirs,
      ),
      // Another agent's, sharing the engine: the same pod, labelled exactly as ours but for the node.
      await place(ourSpec(web(), 'app', 'node-b'), 'running', nodeBWeb),
      await place(ourSpec(web(), 'app', 'node-b'), 'exited', nodeBWeb),
      await place(ourSpec(web(), 'probed', 'node-b'), 'running', nodeBWeb),
      await place(ourSpec(old, 'app', 'node-b'), 'running', nodeBOld),
    ];
    foreign = new Map(
      memory
        .snapshot()
        .filter((c) => ids.includes(c.id))
        .map((c) => [c.id, { name: c.name, state: c.state, startedAt: c.startedAt }]),
    );
    memory.killSandbox(holders[2]!.id);
    foreignSandboxes = new Map(memory.sandboxSnapshot().map((x) => [x.id, { name: x.name, state: x.state }]));
    // Ours from before this agent started: one to adopt, one no source asks for any more.
    webSandbox = (await memory.runSandbox(ourWebSandbox)).id;
    staleSandbox = (await memory.runSandbox(buildSandboxSpec(old, { node: HOST, source: 'a' }))).id;
    await place(ourSpec(web(), 'app'), 'running', webSandbox);
    stale = await place(ourSpec(old, 'app'), 'running', staleSandbox);

    guard = new GuardedRuntime(listingWithoutTimes(memory));
    guard.protect(...[...foreign].flatMap(([id, c]) => [id, c.name]), ...[...foreignSandboxes].flatMap(([id, x]) => [id, x.name]));
    source = new ScriptedSource('a', { initial: [web()] });
    server = new ServerManifestSource({ port: 0 });
    kubelet = new Kubelet({
      runtime: guard.runtime,
      sources: [source, server],
      clock,
      events: new RecordingEventSink(),
      hostname: HOST,
      syncFrequencyMs: SYNC_MS,
    });
    server.mount(agentApiHandler(kubelet));
    await kubelet.start();
    await kubelet.sync();
  });

  afterEach(async () => {
    await kubelet.close();
    await server.close();
    expect(guard.foreignCalls()).toEqual([]);
    for (const c of memory.snapshot().filter((x) => foreign.has(x.id))) {
      const before = foreign.get(c.id)!;
      expect({ name: c.name, state: c.state, startedAt: c.startedAt }).toEqual(before);
    }
    expect(memory.snapshot().filter((c) => foreign.has(c.id))).toHaveLength(foreign.size);
    const holders = memory.sandboxSnapshot().filter((x) => foreignSandboxes.has(x.id));
    expect(new Map(holders.map((x) => [x.id, { name: x.name, state: x.state }]))).toEqual(foreignSandboxes);
  });

  it('adopts ours, removes our stale pod and creates what is missing, beside them', async () => {
    expect(ours('old', 'app')).toEqual([]);
    expect(ours('web', 'app')).toHaveLength(1);
    expect(ours('web', 'probed')).toHaveLength(1);
    expect(called('stop', stale) && called('remove', stale)).toBe(true);
    expect(called('removeSandbox', staleSandbox)).toBe(true);
    expect(called('start', runningOurs('probed').id)).toBe(true);
    // Joined our own sandbox, never a foreign holder.
    expect(memory.sandboxOf(runningOurs('probed').id)).toBe(webSandbox);
    expect(called('create', webSandbox)).toBe(true);
  });

  it('inspects, restarts and collects only our crashed containers', async () => {
    // A first crash is restarted at once, the second after 10 s.
    for (const delay of [0, 10_000]) {
      memory.exit(runningOurs('app').id, 1);
      await kubelet.sync();
      await clock.advance(delay);
      await kubelet.sync();
    }
    const exited = ours('web', 'app').filter((c) => c.state === 'exited');
    expect(exited).toHaveLength(1); // the older one was collected
    expect(called('inspect', exited[0]!.id)).toBe(true); // its exit time was looked up
    expect(runningOurs('app').labels[Labels.restartCount]).toBe('2');
  });

  it('probes and kills only our container', async () => {
    const probed = runningOurs('probed');
    memory.onExec(probed.id, () => ({ exitCode: 1, output: 'unhealthy' }));
    await clock.advance(2_000);
    expect(called('exec', probed.id)).toBe(true);
    expect(called('stop', probed.id)).toBe(true);
    expect(memory.snapshot().find((c) => c.id === probed.id)?.state).toBe('exited');
  });

  it('replaces our container on a spec change and removes ours with the pod', async () => {
    const before = runningOurs('app');
    source.push([web('app:2')]);
    await kubelet.sync();
    expect(runningOurs('app').image).toBe('app:2');
    expect(called('remove', before.id)).toBe(true);
    source.push([]);
    await kubelet.sync();
    expect(ours('web', 'app')).toEqual([]);
    expect(ours('web', 'probed')).toEqual([]);
    expect(memory.sandboxSnapshot().some((x) => x.id === webSandbox)).toBe(false);
  });

  it('shows no foreign container through containerInfo, pods, plan and metrics', async () => {
    for (const [id, { name }] of foreign) {
      for (const wanted of [id, name, `/${name}`]) await expect(kubelet.containerInfo(wanted)).resolves.toBeUndefined();
    }
    const app = runningOurs('app');
    expect((await kubelet.containerInfo('web/app'))?.id).toBe(app.id);
    expect((await kubelet.containerInfo(app.name))?.id).toBe(app.id);

    const shown = (await kubelet.pods()).flatMap((p) => p.containers.map((c) => c.id));
    expect(shown.sort()).toEqual([app.id, runningOurs('probed').id].sort());
    expect(await kubelet.plan()).toMatchObject({ inSync: true, steps: [] });
    const { body } = await kubelet.metrics();
    expect(body).toContain('kubelet_ts_containers{state="running"} 2');
    expect(body).toContain('kubelet_ts_containers{state="exited"} 0');
  });

  it('answers 404 on the agent server for a foreign container, by id and by name', async () => {
    const info = (name: string) => fetch(`${server.url}/containerInfo?container=${encodeURIComponent(name)}`);
    for (const [id, { name }] of foreign) {
      expect((await info(id)).status).toBe(404);
      expect((await info(name)).status).toBe(404);
    }
    const res = await info('web/app');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { Id: string }).Id).toBe(runningOurs('app').id);
  });

  it('leaves them alone across many sync periods and at close', async () => {
    for (let i = 0; i < 5; i++) await clock.advance(SYNC_MS);
    await settle();
    expect(kubelet.status().passes).toBeGreaterThan(5);
  });
});
