import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { access, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import { buildTestImages, independentDocker, removeLabelled, type TestImages } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';

const idle = 'trap "exit 0" TERM; while true; do sleep 1; done';

/** A v1 Pod with one emptyDir volume, whose container writes `text` there and then `then` (a shell). */
function writer(name: string, text: string, then: string, busybox: string, restartPolicy: 'Never' | 'Always') {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      restartPolicy,
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [
        {
          name: 'main',
          image: busybox,
          command: ['sh', '-c', `echo ${text} > /data/file; ${then}`],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
    },
  };
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * Issue 27 items 1 and 2 on a real engine: an ordinary restart (SIGTERM, start again on the same
 * `--root-dir`) keeps what the server was told and what a source that turned unreadable last gave,
 * with the data in their volumes; a pod the agent has no record of loses its containers, never
 * its volumes.
 */
describe('kubelet-ts CLI on Docker: what survives a restart', () => {
  const docker = independentDocker();
  const node = `e2e-restart-${process.pid}`;
  let images: TestImages;
  let root: string;
  let config: string;
  let agent: AgentProcess | undefined;

  const start = () =>
    new AgentProcess([
      '--runtime',
      'docker',
      '--config',
      config,
      '--root-dir',
      root,
      '--hostname-override',
      node,
      '--pod-infra-image',
      images.pause,
      '--sync-frequency',
      '1s',
      '--file-check-frequency',
      '500ms',
      '--log-level',
      'debug',
    ]);

  const ours = async () => docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${node}`, Labels.manifestId] } });
  const idsOf = async (podId: string) =>
    (await ours())
      .filter((c) => c.Labels[Labels.manifestId] === podId)
      .map((c) => `${c.Id}:${c.State}`)
      .sort();
  const volume = (podId: string) => join(root, 'volumes', podId, 'data', 'file');
  const post = async (url: string, body: unknown) => {
    const res = await fetch(`${url}/container`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
  };
  /** Waits for `n` more sync passes of `a` than it had made when called. */
  const passes = async (a: AgentProcess, n: number) => {
    const count = () => a.lines.filter((l) => l.msg === 'sync pass').length;
    const from = count();
    await a.until(() => count() >= from + n, `${n} sync passes`, 20_000);
  };

  beforeAll(async () => {
    images = await buildTestImages();
    root = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-restart-'));
    config = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-restart-config-'));
    await writeFile(join(config, 'filed.json'), JSON.stringify(writer('filed', 'from-file', idle, images.busybox, 'Always')));
  });

  afterAll(async () => {
    agent?.kill();
    await agent?.exit;
    await removeLabelled(`${Labels.node}=${node}`);
    await rm(root, { recursive: true, force: true });
    await rm(config, { recursive: true, force: true });
  });

  it('keeps the POSTed pods (ended and running), the pods of a file turned invalid, and their volumes', async () => {
    agent = start();
    const url = await agent.serverUrl();
    await post(url, writer('ended', 'written-before', 'exit 0', images.busybox, 'Never'));
    await post(url, writer('running', 'also-before', idle, images.busybox, 'Always'));
    await agent.until(
      () => agent!.events('ContainerExited', 'ended').length === 1 && agent!.events('ContainerStarted', 'filed').length === 1,
      'the ended pod to end and the file pod to run',
      30_000,
    );
    await agent.until(() => agent!.events('ContainerStarted', 'running').length === 1, 'the running pod to run', 30_000);
    // The file turns invalid while the agent runs: it keeps its last good set, in memory and on disk.
    await writeFile(join(config, 'filed.json'), '{ "apiVersion": "v1", "kind": "Pod", ');
    await agent.until(
      () => agent!.events('SourceError').length > 0 || agent!.events('ManifestRejected').length > 0,
      'the file to be refused',
    );
    const before = { ended: await idsOf('ended'), running: await idsOf('running'), filed: await idsOf('filed') };
    expect(before.ended.length).toBeGreaterThan(0);
    expect(await readFile(volume('ended'), 'utf8')).toBe('written-before\n');
    expect((await agent.stop('SIGTERM')).code).toBe(0);

    agent = start();
    await agent.serverUrl();
    await passes(agent, 4);
    // Nothing was stopped, replaced or removed: the same containers, in the same states.
    expect({ ended: await idsOf('ended'), running: await idsOf('running'), filed: await idsOf('filed') }).toEqual(before);
    expect(await readFile(volume('ended'), 'utf8')).toBe('written-before\n');
    expect(await readFile(volume('running'), 'utf8')).toBe('also-before\n');
    expect(await readFile(volume('filed'), 'utf8')).toBe('from-file\n');
    const pods = (await (await fetch(`${await agent.serverUrl()}/pods`)).json()) as { items: Array<{ metadata: { name: string } }> };
    expect(pods.items.map((p) => p.metadata.name).sort()).toEqual(['ended', 'filed', 'running']);
    expect(agent.lines.filter((l) => l.msg.startsWith('restored the last good set')).map((l) => l['source'])).toEqual(['file', 'server']);
  });

  it('removes a pod DELETEd after the restart with its volume: the server was told', async () => {
    const url = await agent!.serverUrl();
    const res = await fetch(`${url}/container/ended`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    await agent!.until(() => agent!.events('SandboxRemoved', 'ended').length > 0, 'the deleted pod to be removed', 30_000);
    expect(await idsOf('ended')).toEqual([]);
    expect(await exists(join(root, 'volumes', 'ended'))).toBe(false);
  });

  it('removes the containers of a pod it has no record of, but never its volume', async () => {
    expect((await agent!.stop('SIGTERM')).code).toBe(0);
    // The record of what the server was told is lost (a new --root-dir, a disk replaced).
    await rm(join(root, 'sources', 'server.json'));
    agent = start();
    await agent.until(() => agent!.events('SandboxRemoved', 'running').length > 0, 'the unknown pod to be removed', 30_000);
    expect(await idsOf('running')).toEqual([]);
    expect(await readFile(volume('running'), 'utf8')).toBe('also-before\n');
    expect(agent.lines.some((l) => l.msg.includes('volumes kept') && String(l.msg).includes('running'))).toBe(true);
    // The file's pod still runs from the kept set: the file is still invalid.
    expect((await idsOf('filed')).length).toBeGreaterThan(0);
  });
});
