import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import {
  EtcdServer,
  TcpGate,
  buildTestImages,
  independentDocker,
  reapEngineDebris,
  removeLabelled,
  stopDockerEngine,
  type StoppedEngine,
  type TestImages,
} from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { EngineEvents, STOPPING } from './engine-events.js';

const idle = 'trap "exit 0" TERM; while true; do sleep 1; done';
type UrlMode = 'ok' | '500' | 'hang' | 'garbage';

/**
 * Real faults under a running agent on a real engine: its URL backend failing three ways, its
 * manifest file caught mid-write, its etcd out of reach and restarted, the engine itself stopped
 * mid-pass, and the agent SIGKILLed mid-pass. The engine's own event stream is the witness that
 * nothing was stopped that should not have been.
 */
describe('an agent on a real engine through faults of its sources, its engine and itself', () => {
  const docker = independentDocker();
  const node = `e2e-faults-${process.pid}`;
  const key = `/registry/hosts/${node}/kubelet`;
  const engineEvents = new EngineEvents(docker, `${Labels.node}=${node}`);
  let images: TestImages;
  let dir: string;
  let volumes: string;
  let etcd: EtcdServer;
  let gate: TcpGate;
  let http: Server;
  let urlMode: UrlMode = 'ok';
  let urlPods = ['url-pod'];
  const hanging: ServerResponse[] = [];
  let agent: AgentProcess;
  let stoppedEngine: StoppedEngine | undefined;

  const pod = (id: string) => ({
    version: 'v1beta1',
    id,
    containers: [{ name: 'main', image: images.busybox, command: ['sh', '-c', idle] }],
  });
  const putEtcd = (ids: string[]) => etcd.gateway('/v3/kv/put', { key: btoa(key), value: btoa(JSON.stringify(ids.map(pod))) });

  const startAgent = () =>
    new AgentProcess([
      '--runtime',
      'docker',
      '--hostname-override',
      node,
      '--host-ip',
      '127.0.0.1',
      '--volumes-root',
      volumes,
      '--pod-infra-image',
      images.pause,
      '--sync-frequency',
      '1s',
      '--log-level',
      'debug',
      '--config',
      dir,
      '--file-check-frequency',
      '500ms',
      '--manifest-url',
      `http://127.0.0.1:${(http.address() as { port: number }).port}/manifests`,
      '--http-check-frequency',
      '200ms',
      '--manifest-url-timeout',
      '1s',
      '--etcd-servers',
      gate.endpoint,
    ]);

  /** Our application containers (not the pods' infra containers), by `pod/container`. */
  const ours = async () => {
    const listed = await docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${node}`, Labels.manifestId] } });
    return listed.map((c) => ({
      id: c.Id,
      key: `${c.Labels[Labels.manifestId]}/${c.Labels[Labels.containerName]}`,
      running: c.State === 'running',
    }));
  };

  /** `pod/container` → id of each running container; a duplicate shows as a second entry. */
  const running = async () =>
    (await ours())
      .filter((c) => c.running)
      .map((c) => `${c.key} ${c.id}`)
      .sort();

  /** Waits until exactly one container runs for each of `pods` and none runs for any other pod. */
  const converged = async (pods: string[], what: string, ms = 45_000) => {
    const from = agent.lines.length;
    const want = pods.map((p) => `${p}/main`).sort();
    const deadline = Date.now() + ms;
    let seen: string[] = [];
    for (;;) {
      seen = (await running()).map((line) => line.split(' ')[0]!);
      if (JSON.stringify(seen) === JSON.stringify(want)) return;
      if (Date.now() > deadline) {
        throw new Error(
          `${what}: running ${JSON.stringify(seen)}, want ${JSON.stringify(want)}; the agent said:\n${acted(Math.max(0, from - 40)).join('\n')}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  /** Log lines since `from` carrying an event of `type` whose message mentions `text`. */
  const said = (from: number, type: string, text: string) =>
    agent.lines.slice(from).some((l) => l['event'] === type && String(l.msg).includes(text));

  /** Stop-like engine events since `mark`, as `die <pod>` or `die <pod> (infra)`. */
  const stopsSince = (mark: number) =>
    engineEvents.since(
      mark,
      (labels, id) =>
        labels[Labels.manifestId] ?? (labels[Labels.sandbox] === undefined ? id.slice(0, 12) : `${labels[Labels.sandbox]} (infra)`),
      STOPPING,
    );

  /** The agent's events since log line `from`, one line each, for failure messages. */
  const acted = (from: number) =>
    agent.lines
      .slice(from)
      .filter(
        (l) =>
          typeof l['event'] === 'string' || l.level >= 40 || l.msg === 'source update' || (l.msg === 'sync pass' && l['actions'] !== 0),
      )
      .map((l) =>
        typeof l['event'] === 'string' || l.level >= 40
          ? `${String(l['event'] ?? 'log')} ${String(l['podId'] ?? '')}/${String(l['container'] ?? '')} (${String(l['reason'] ?? l['code'] ?? '')}): ${l.msg}`
          : `${l.msg} ${JSON.stringify({ source: l['source'], manifests: l['manifests'], desired: l['desired'], actions: l['actions'], held: l['held'] })}`,
      );

  beforeAll(async () => {
    images = await buildTestImages();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-faults-'));
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-faults-volumes-'));
    etcd = await EtcdServer.launch();
    gate = await TcpGate.listen(etcd.endpoint);
    http = createServer((_, res) => {
      if (urlMode === '500') res.writeHead(500).end('backend broken');
      else if (urlMode === 'hang') hanging.push(res);
      else if (urlMode === 'garbage') res.end('\u0000{[ this is : not: : yaml');
      else res.end(JSON.stringify(urlPods.map(pod)));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    await writeFile(join(dir, 'file-pod.json'), JSON.stringify(pod('file-pod')));
    await putEtcd(['etcd-pod']);
    await engineEvents.open();
    agent = startAgent();
  });

  afterAll(async () => {
    // A failed test must not leave the engine down for the suites after this one.
    await stoppedEngine?.start();
    agent?.kill();
    await agent?.exit;
    engineEvents.close();
    for (const res of hanging) res.destroy();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
    await gate?.close();
    await etcd?.destroy();
    await removeLabelled(`${Labels.node}=${node}`);
    // Stopping the engine mid-create can leave a shim holding a bridge address; later suites must not inherit it.
    await reapEngineDebris();
    await rm(dir, { recursive: true, force: true });
    await rm(volumes, { recursive: true, force: true });
  });

  it('runs the pods of its file, URL and etcd sources', async () => {
    await converged(['file-pod', 'url-pod', 'etcd-pod'], 'first start');
  });

  it('keeps the URL source’s last good set while the backend answers 500, hangs, and sends garbage', async () => {
    const before = await running();
    const mark = engineEvents.mark();
    const from = agent.lines.length;
    urlMode = '500';
    await agent.until(() => said(from, 'SourceError', '500'), 'the 500 reported');
    urlMode = 'hang';
    await agent.until(
      () => agent.lines.slice(from).some((l) => l['event'] === 'SourceError' && l['reason'] === 'Timeout'),
      'the hang reported as a Timeout',
    );
    urlMode = 'garbage';
    await agent.until(() => said(from, 'ManifestRejected', '/manifests'), 'the garbage reported');
    await new Promise((r) => setTimeout(r, 1500)); // more than a sync period, several polls
    expect(stopsSince(mark)).toEqual([]);
    expect(await running()).toEqual(before);
    urlPods = ['url-pod', 'url-pod-2'];
    urlMode = 'ok';
    await converged(['file-pod', 'url-pod', 'url-pod-2', 'etcd-pod'], 'the recovered backend followed');
    expect(stopsSince(mark)).toEqual([]);
  });

  it('stops nothing while a manifest file is truncated mid-write, then follows the completed file', async () => {
    const before = await running();
    const mark = engineEvents.mark();
    const from = agent.lines.length;
    const text = JSON.stringify([pod('file-pod'), pod('file-pod-2')]);
    const file = await open(join(dir, 'file-pod.json'), 'w'); // truncates: the file is empty now
    try {
      await file.write(text.slice(0, Math.floor(text.length / 2)));
      await file.sync();
      await agent.until(() => said(from, 'ManifestRejected', 'file-pod.json'), 'the half-written file reported');
      await new Promise((r) => setTimeout(r, 1200)); // a sync period with the broken file in place
      expect(stopsSince(mark)).toEqual([]);
      expect(await running()).toEqual(before);
      await file.write(text.slice(Math.floor(text.length / 2)));
    } finally {
      await file.close();
    }
    await converged(['file-pod', 'file-pod-2', 'url-pod', 'url-pod-2', 'etcd-pod'], 'the completed file followed');
    expect(stopsSince(mark)).toEqual([]);
  });

  it('applies a change written to etcd while the agent was cut off from it', async () => {
    const mark = engineEvents.mark();
    const from = agent.lines.length;
    gate.cut();
    await agent.until(
      () => agent.lines.slice(from).some((l) => l['event'] === 'SourceError' && l['source'] === 'etcd'),
      'the lost etcd reported',
    );
    await putEtcd(['etcd-pod', 'etcd-pod-2']);
    await new Promise((r) => setTimeout(r, 1200));
    expect((await running()).some((line) => line.startsWith('etcd-pod-2/'))).toBe(false);
    gate.restore();
    await converged(['file-pod', 'file-pod-2', 'url-pod', 'url-pod-2', 'etcd-pod', 'etcd-pod-2'], 'the change made while cut off applied');
    expect(stopsSince(mark)).toEqual([]);
  });

  it('resumes its etcd watch after etcd restarts', async () => {
    const mark = engineEvents.mark();
    await etcd.stop();
    await etcd.start();
    await putEtcd(['etcd-pod', 'etcd-pod-3']);
    await converged(['file-pod', 'file-pod-2', 'url-pod', 'url-pod-2', 'etcd-pod', 'etcd-pod-3'], 'the change after the restart applied');
    // Only the pod taken out of the set was stopped.
    expect(stopsSince(mark).filter((e) => !e.includes(' etcd-pod-2'))).toEqual([]);
  });

  it('reports the engine gone mid-pass, keeps its sets, and converges when the engine returns', async () => {
    const desired = ['file-pod', 'file-pod-2', 'url-pod', 'url-pod-2', 'etcd-pod', 'etcd-pod-3', 'burst-a', 'burst-b', 'burst-c'];
    const from = agent.lines.length;
    await writeFile(join(dir, 'burst.json'), JSON.stringify(['burst-a', 'burst-b', 'burst-c'].map(pod)));
    await agent.until(
      () => agent.lines.slice(from).some((l) => l['event'] === 'ContainerCreated' && String(l['podId']).startsWith('burst-')),
      'the burst under way',
      20_000,
    );
    stoppedEngine = await stopDockerEngine();
    const down = agent.lines.length;
    await agent.until(
      () => agent.lines.slice(down).some((l) => String(l.msg).startsWith('sync pass failed') && l['code'] === 'Unavailable'),
      'the engine reported Unavailable',
      20_000,
    );
    await agent.until(
      () => agent.lines.slice(down).filter((l) => l.msg === 'sync pass').length >= 2,
      'two passes while the engine is down',
      20_000,
    );
    // Every pass while the engine was away still wanted every pod: no set was lost.
    const passes = agent.lines.slice(down).filter((l) => l.msg === 'sync pass');
    expect(passes.map((l) => l['desired'])).toEqual(passes.map(() => desired.length));
    await stoppedEngine.start();
    stoppedEngine = undefined;
    await engineEvents.open();
    await converged(desired, 'converged after the engine returned', 90_000);
    // No orphan: every container of ours belongs to a desired pod.
    expect([...new Set((await ours()).map((c) => c.key.split('/')[0]))].sort()).toEqual([...desired].sort());
  }, 180_000);

  it('adopts what it started after a SIGKILL mid-pass: no duplicate, no orphan, no restart of the healthy', async () => {
    const desired = [
      'file-pod',
      'file-pod-2',
      'url-pod',
      'url-pod-2',
      'etcd-pod',
      'etcd-pod-3',
      'burst-a',
      'burst-b',
      'burst-c',
      'kill-a',
      'kill-b',
      'kill-c',
    ];
    const healthy = await running();
    const mark = engineEvents.mark();
    let from = agent.lines.length;
    await writeFile(join(dir, 'kill.json'), JSON.stringify(['kill-a', 'kill-b', 'kill-c'].map(pod)));
    await agent.until(
      () => agent.lines.slice(from).some((l) => l['event'] === 'ContainerCreated' && String(l['podId']).startsWith('kill-')),
      'the new pods under way',
      20_000,
    );
    expect((await agent.stop('SIGKILL')).signal).toBe('SIGKILL');
    agent = startAgent();
    from = 0;
    // Started, before anything is judged: the pods the killed agent made may be running already, and
    // a SIGTERM before the agent listens for it would end it by the signal, not by its shutdown.
    await agent.until(() => agent.lines.some((l) => l.msg === 'kubelet starting'), 'the restarted agent to start', 20_000);
    await converged(desired, 'converged after the restart', 60_000);
    const now = await running();
    const missing = healthy.filter((line) => !now.includes(line));
    if (missing.length > 0) {
      const engine = engineEvents.since(
        mark,
        (labels, id) => `${labels[Labels.manifestId] ?? labels[Labels.sandbox] ?? '?'} ${id.slice(0, 12)}`,
      );
      throw new Error(
        `healthy containers replaced: ${missing.join(', ')}\n--- the restarted agent ---\n${acted(from).join('\n')}\n--- the engine ---\n${engine.join('\n')}`,
      );
    }
    // A half-made container of a new pod may be replaced; nothing else is stopped.
    expect(stopsSince(mark).filter((e) => !e.includes(' kill-'))).toEqual([]);
    // Each new pod has exactly one container: what the killed agent created was adopted or replaced, not left behind.
    const created = (await ours())
      .filter((c) => c.key.startsWith('kill-'))
      .map((c) => c.key)
      .sort();
    expect(created).toEqual(['kill-a/main', 'kill-b/main', 'kill-c/main']);
    expect((await agent.stop('SIGTERM')).code).toBe(0);
  }, 120_000);
});
