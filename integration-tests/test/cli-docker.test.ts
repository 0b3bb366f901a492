import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import { buildTestImages, freePort, independentDocker, removeLabelled, type TestImages } from '@kubelet-ts/testkit';
import type Dockerode from 'dockerode';
import { AgentProcess } from './agent-process.js';
import { kubectl } from './kubectl.js';

/** Runs a command inside a container (through the independent client) and returns its exit code and output. */
async function exec(container: Dockerode.Container, cmd: string[]): Promise<{ code: number; output: string }> {
  const e = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await e.start({});
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  await new Promise((resolve) => stream.on('end', resolve));
  const info = await e.inspect();
  return { code: info.ExitCode ?? -1, output: Buffer.concat(chunks).toString('utf8') };
}

// Shells that end on SIGTERM, so stops take a second rather than the grace period.
const serve =
  'trap "exit 0" TERM; mkdir -p /www && echo "hello-$MODE" > /www/index.html && httpd -p 80 -h /www; while true; do sleep 1; done';
const idle = 'trap "exit 0" TERM; while true; do sleep 1; done';

describe('kubelet-ts CLI on a real Docker engine', () => {
  const docker = independentDocker();
  const node = `e2e-docker-${process.pid}`;
  let images: TestImages;
  let dir: string;
  let volumes: string;
  let port: number;
  let foreignId: string;
  let agent: AgentProcess | undefined;

  const start = () =>
    new AgentProcess([
      '--runtime',
      'docker',
      '--config',
      dir,
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
      '--file-check-frequency',
      '500ms',
      '--log-level',
      'debug',
    ]);

  const ours = async () => docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${node}`, Labels.manifestId] } });

  const byName = async (container: string) => {
    const found = (await ours()).filter((c) => c.Labels[Labels.containerName] === container);
    expect(found).toHaveLength(1);
    return docker.getContainer(found[0]!.Id);
  };

  beforeAll(async () => {
    images = await buildTestImages();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-docker-'));
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-volumes-'));
    port = await freePort();
    const foreign = await docker.createContainer({
      Image: images.busybox,
      Cmd: ['sh', '-c', idle],
      name: `not-ours-${process.pid}`,
      Labels: { purpose: 'foreign' },
    });
    await foreign.start();
    foreignId = foreign.id;
    await writeFile(
      join(dir, 'web.yaml'),
      JSON.stringify({
        version: 'v1beta1',
        id: 'web',
        volumes: [{ name: 'content' }],
        containers: [
          {
            name: 'server',
            image: images.busybox,
            command: ['sh', '-c', serve],
            workingDir: '/www',
            env: [{ name: 'MODE', value: 'e2e' }],
            ports: [{ containerPort: 80, hostPort: port }],
          },
          {
            name: 'probe',
            image: images.busybox,
            command: ['sh', '-c', idle],
            volumeMounts: [{ name: 'content', mountPath: '/content', readOnly: true }],
          },
        ],
      }),
    );
    await writeFile(
      join(dir, 'missing.yaml'),
      JSON.stringify({ id: 'missing', containers: [{ name: 'main', image: 'kubelet-ts.invalid/none:1' }] }),
    );
    agent = start();
  });

  afterAll(async () => {
    agent?.kill();
    await agent?.exit;
    await removeLabelled(`${Labels.node}=${node}`);
    await docker
      .getContainer(foreignId)
      .remove({ force: true })
      .catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    await rm(volumes, { recursive: true, force: true });
  });

  it('creates the containers with their env, command, working dir, labels and mounts', async () => {
    await agent!.until(() => agent!.events('ContainerStarted', 'web').length === 2, 'both containers started', 30_000);
    const server = await (await byName('server')).inspect();
    expect(server.Config.Env).toContain('MODE=e2e');
    expect(server.Config.Cmd).toEqual(['sh', '-c', serve]);
    expect(server.Config.WorkingDir).toBe('/www');
    expect(server.Config.Labels).toMatchObject({
      [Labels.manifestId]: 'web',
      [Labels.containerName]: 'server',
      [Labels.source]: 'file',
      [Labels.node]: node,
    });
    expect(server.Config.Labels[Labels.specHash]).toMatch(/^v1-[0-9a-f]{16}$/);
    expect(server.Name).toMatch(/^\/server--web--[0-9a-f]{8}$/);
    const probe = await (await byName('probe')).inspect();
    expect(probe.HostConfig.Binds).toEqual([`${join(volumes, 'web', 'content')}:/content:ro`]);
    // What the engine keeps of their output is bounded (issue 22): the kubelet's 10Mi × 5 by default.
    expect(server.HostConfig.LogConfig).toEqual({ Type: 'json-file', Config: { 'max-size': '10485760', 'max-file': '5' } });
  });

  it('serves what a container printed at /containerLogs, as the engine logged it (issue 22)', async () => {
    const url = await agent!.serverUrl();
    const server = await byName('server');
    const run = await server.exec({
      Cmd: ['sh', '-c', 'echo from-the-engine >/proc/1/fd/1; echo to-stderr >/proc/1/fd/2'],
      AttachStdout: true,
    });
    await new Promise((resolve) => run.start({}).then((s) => s.on('end', resolve).resume()));
    let body = '';
    for (let i = 0; i < 100 && !body.includes('to-stderr'); i++) {
      body = await (await fetch(`${url}/containerLogs/default/web/server?tailLines=2&timestamps=true`)).text();
      if (!body.includes('to-stderr')) await new Promise((r) => setTimeout(r, 100));
    }
    // Each line after its time; stdout and stderr are two pipes, so their order is the engine's.
    const lines = body.split('\n').filter((l) => l !== '');
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z /);
    expect(lines.map((l) => l.slice(l.indexOf(' ') + 1)).sort()).toEqual(['from-the-engine', 'to-stderr']);
    // The same route, and /logs/, read by a client that is not ours (this agent asks for no token,
    // so kubectl reads it over plain HTTP).
    const viaKubectl = await kubectl(['get', '--raw', '/containerLogs/default/web/server?tailLines=2', '--server', url]);
    expect(
      viaKubectl.stdout
        .split('\n')
        .filter((l) => l !== '')
        .sort(),
    ).toEqual(['from-the-engine', 'to-stderr']);
    const listing = await kubectl(['get', '--raw', '/logs/', '--server', url]);
    expect(listing.stdout.split('\n').length).toBeGreaterThan(1);
  });

  it('fails a pod whose image cannot be pulled with a clear event, and runs the others', async () => {
    await agent!.until(() => agent!.events('ImagePullFailed', 'missing').length >= 1, 'pull failure reported', 30_000);
    const failure = agent!.events('ImagePullFailed', 'missing')[0]!;
    expect(['NotFound', 'Unavailable']).toContain(failure['reason']);
    expect(failure.msg).toContain('kubelet-ts.invalid/none:1');
    expect(agent!.events('ContainerStarted', 'web')).toHaveLength(2);
    await rm(join(dir, 'missing.yaml'));
  });

  it('publishes the pod port on 127.0.0.1 and it answers HTTP', async () => {
    let body = '';
    for (let i = 0; i < 50 && body === ''; i++) {
      body = await fetch(`http://127.0.0.1:${port}/`).then(
        (r) => r.text(),
        () => '',
      );
      if (body === '') await new Promise((r) => setTimeout(r, 100));
    }
    expect(body.trim()).toBe('hello-e2e');
  });

  it('lets the containers of a pod reach each other on localhost', async () => {
    const result = await exec(await byName('probe'), ['wget', '-q', '-O', '-', 'http://localhost:80/']);
    expect(result.code).toBe(0);
    expect(result.output).toContain('hello-e2e'); // raw exec stream: 8-byte frame headers around it
  });

  it('mounts a read-only volume read-only', async () => {
    const result = await exec(await byName('probe'), ['touch', '/content/x']);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('Read-only file system');
  });

  it('adopts the running containers after a SIGKILL and restart: no restart, no duplicate', async () => {
    // Killed while quiet: a pass after the last test's change that found nothing to do.
    const seen = agent!.lines.length;
    await agent!.until(
      () => agent!.lines.slice(seen).some((l) => l.msg === 'sync pass' && l['actions'] === 0 && l['held'] === 0),
      'a quiet pass',
      20_000,
    );
    const before = await ours();
    expect(before).toHaveLength(2);
    const startedAt = new Map(
      await Promise.all(before.map(async (c) => [c.Id, (await docker.getContainer(c.Id).inspect()).State.StartedAt] as const)),
    );
    const killed = await agent!.stop('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    agent = start();
    await agent.until(() => agent!.lines.filter((l) => l.msg === 'sync pass').length >= 2, 'two passes after restart', 20_000);
    expect(agent.events('ContainerCreated')).toEqual([]);
    expect(agent.events('ContainerStarted')).toEqual([]);
    const after = await ours();
    const acted = agent.lines
      .filter((l) => typeof l['event'] === 'string')
      .map((l) => `${String(l['event'])} ${String(l['podId'])}/${String(l['container'])} (${String(l['reason'])}): ${l.msg}`);
    expect({ ids: after.map((c) => c.Id).sort(), acted }).toEqual({ ids: before.map((c) => c.Id).sort(), acted: [] });
    for (const c of after) expect((await docker.getContainer(c.Id).inspect()).State.StartedAt).toBe(startedAt.get(c.Id));
  });

  it('stops and removes the containers of a removed manifest, and its network namespace', async () => {
    await rm(join(dir, 'web.yaml'));
    await agent!.until(() => agent!.events('ContainerRemoved', 'web').length === 2, 'both removed', 30_000);
    // Its sandbox goes after its containers.
    await agent!.until(() => agent!.events('SandboxRemoved', 'web').length === 1, 'the sandbox removed', 10_000);
    expect(await ours()).toEqual([]);
    expect(await docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${node}`] } })).toEqual([]);
  });

  it('never touched the foreign container beside them', async () => {
    const foreign = await docker.getContainer(foreignId).inspect();
    expect(foreign.State.Running).toBe(true);
    expect(foreign.RestartCount).toBe(0);
    const { code } = await agent!.stop('SIGTERM');
    expect(code).toBe(0);
    expect((await docker.getContainer(foreignId).inspect()).State.Running).toBe(true);
  });
});
