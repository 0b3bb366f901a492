import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import { assertPodman, freePort, independentPodman, podmanHost, removePodmanLabelled, TEST_IMAGES } from '@kubelet-ts/testkit';
import type Dockerode from 'dockerode';
import { AgentProcess } from './agent-process.js';

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

/** The CLI as a process, with `--runtime docker` pointed at Podman's Docker-compatible service. */
describe('kubelet-ts CLI on Podman (the Docker runtime on its Docker API)', () => {
  const podman = independentPodman();
  const node = `e2e-podman-${process.pid}`;
  let dir: string;
  let volumes: string;
  let port: number;
  let foreignId: string | undefined;
  let agent: AgentProcess | undefined;

  const ours = async () => podman.listContainers({ all: true, filters: { label: [`${Labels.node}=${node}`] } });

  const byName = async (container: string) => {
    const found = (await ours()).filter((c) => c.Labels[Labels.containerName] === container);
    expect(found).toHaveLength(1);
    return podman.getContainer(found[0]!.Id);
  };

  beforeAll(async () => {
    await assertPodman();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-podman-'));
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-podman-volumes-'));
    port = await freePort();
    const foreign = await podman.createContainer({
      Image: TEST_IMAGES.busybox,
      Cmd: ['sh', '-c', idle],
      name: `not-ours-${process.pid}`,
      Labels: { purpose: 'foreign' },
    });
    foreignId = foreign.id;
    await foreign.start();
    await writeFile(
      join(dir, 'web.yaml'),
      JSON.stringify({
        version: 'v1beta1',
        id: 'web',
        containers: [
          {
            name: 'server',
            image: TEST_IMAGES.busybox,
            command: ['sh', '-c', serve],
            env: [{ name: 'MODE', value: 'podman' }],
            ports: [{ containerPort: 80, hostPort: port }],
          },
          { name: 'probe', image: TEST_IMAGES.busybox, command: ['sh', '-c', idle] },
        ],
      }),
    );
    agent = new AgentProcess([
      '--runtime',
      'docker',
      '--docker-host',
      podmanHost(),
      '--config',
      dir,
      '--hostname-override',
      node,
      '--host-ip',
      '127.0.0.1',
      '--volumes-root',
      volumes,
      '--pod-infra-image',
      TEST_IMAGES.pause,
      '--sync-frequency',
      '1s',
      '--file-check-frequency',
      '500ms',
      '--log-level',
      'debug',
    ]);
  });

  afterAll(async () => {
    agent?.kill();
    await agent?.exit;
    await removePodmanLabelled(`${Labels.node}=${node}`);
    if (foreignId !== undefined)
      await podman
        .getContainer(foreignId)
        .remove({ force: true })
        .catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    await rm(volumes, { recursive: true, force: true });
  });

  it('runs both containers of the manifest in one sandbox, knowing it talks to Podman', async () => {
    await agent!.until(() => agent!.events('ContainerStarted', 'web').length === 2, 'both containers started', 30_000);
    expect(agent!.lines.some((l) => l.msg === 'the Docker API is served by Podman')).toBe(true);
    const sandboxes = (await ours()).filter((c) => c.Labels[Labels.sandbox] === 'web');
    expect(sandboxes).toHaveLength(1);
    for (const name of ['server', 'probe']) {
      const info = await (await byName(name)).inspect();
      expect(info.State.Running).toBe(true);
      expect(info.HostConfig.NetworkMode).toBe(`container:${sandboxes[0]!.Id}`);
    }
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
    expect(body.trim()).toBe('hello-podman');
  });

  it("lets the containers of a pod reach each other on localhost, under the pod's hostname", async () => {
    const probe = await byName('probe');
    const result = await exec(probe, ['wget', '-q', '-O', '-', 'http://localhost:80/']);
    expect(result.code).toBe(0);
    expect(result.output).toContain('hello-podman'); // raw exec stream: 8-byte frame headers around it
    // Docker gives a container in another's network that one's hostname; on Podman the adapter
    // joins the sandbox's UTS namespace for it.
    for (const container of [probe, await byName('server')]) expect((await exec(container, ['hostname'])).output).toContain('web');
  });

  it('stops and removes the containers of a removed manifest, and its sandbox: nothing is left', async () => {
    await rm(join(dir, 'web.yaml'));
    await agent!.until(() => agent!.events('ContainerRemoved', 'web').length === 2, 'both removed', 30_000);
    await agent!.until(() => agent!.events('SandboxRemoved', 'web').length === 1, 'the sandbox removed', 10_000);
    expect(await ours()).toEqual([]);
    expect(
      await fetch(`http://127.0.0.1:${port}/`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).toBe('refused');
  });

  it('never touched the foreign container beside them', async () => {
    const foreign = await podman.getContainer(foreignId!).inspect();
    expect(foreign.State.Running).toBe(true);
    expect(foreign.RestartCount).toBe(0);
    const { code } = await agent!.stop('SIGTERM');
    expect(code).toBe(0);
    expect((await podman.getContainer(foreignId!).inspect()).State.Running).toBe(true);
  });
});
