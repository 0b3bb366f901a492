import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EtcdServer, HttpFileServer } from '@kubelet-ts/testkit';
import type { V1PodList } from '@kubelet-ts/source-server';
import { AgentProcess } from './agent-process.js';

const pod = (id: string, image = 'busybox:1.36') => ({ version: 'v1beta1', id, containers: [{ name: 'main', image }] });

describe('kubelet-ts CLI with all four sources: file, url, etcd and its own server', () => {
  let dir: string;
  let etcd: EtcdServer;
  let http: HttpFileServer;
  let agent: AgentProcess;
  let server: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-four-'));
    await writeFile(join(dir, 'file.json'), JSON.stringify(pod('from-file')));
    etcd = await EtcdServer.launch();
    await etcd.gateway('/v3/kv/put', { key: btoa('/registry/hosts/four/kubelet'), value: btoa(JSON.stringify([pod('from-etcd')])) });
    http = await HttpFileServer.start();
    const url = await http.put('/manifests', JSON.stringify([pod('from-url')]));
    agent = new AgentProcess([
      '--runtime',
      'memory',
      '--hostname-override',
      'four',
      '--sync-frequency',
      '1s',
      '--config',
      dir,
      '--manifest-url',
      url,
      '--http-check-frequency',
      '200ms',
      '--etcd-servers',
      etcd.endpoint,
    ]);
    server = await agent.serverUrl();
  });

  afterAll(async () => {
    agent.kill();
    await agent.exit;
    await http?.stop();
    await etcd?.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  const started = (podId: string) => agent.events('ContainerStarted', podId).length;

  it('runs the union of what the four sources ask for', async () => {
    const res = await fetch(`${server}/container`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(pod('from-server')),
    });
    expect(res.status).toBe(201);
    await agent.until(() => ['from-file', 'from-url', 'from-etcd', 'from-server'].every((id) => started(id) === 1), 'four pods started');
    const { items } = (await (await fetch(`${server}/pods`)).json()) as V1PodList;
    expect(
      Object.fromEntries(
        items.map((p) => [p.metadata['name'], (p.metadata['annotations'] as Record<string, string>)['kubelet-ts.io/source']]),
      ),
    ).toEqual({ 'from-file': 'file', 'from-url': 'http', 'from-etcd': 'etcd', 'from-server': 'server' });
  });

  it('runs one copy of a manifest id given by two sources, from the higher-priority source, and says so', async () => {
    await http.put('/manifests', JSON.stringify([pod('from-url'), pod('from-file', 'busybox:other')]));
    await agent.until(() => agent.events('ManifestConflict', 'from-file').length === 1, 'conflict reported');
    const conflict = agent.events('ManifestConflict', 'from-file')[0]!;
    expect(conflict.msg).toContain('running the one from file');
    await new Promise((r) => setTimeout(r, 1200));
    expect(started('from-file')).toBe(1);
    expect(agent.events('ContainerRemoved')).toEqual([]);
  });

  it('keeps the url source’s last good set when it starts failing', async () => {
    await http.put('/manifests', 'containers: [ this is not yaml');
    await agent.until(() => agent.events('ManifestRejected').some((l) => String(l.msg).includes('/manifests')), 'bad body reported');
    await new Promise((r) => setTimeout(r, 1200));
    expect(agent.events('ContainerRemoved')).toEqual([]);
    const { code } = await agent.stop();
    expect(code).toBe(0);
  });
});
