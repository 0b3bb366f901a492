import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { access, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import { assertContainerd, criCgroupParent, criEndpoint, freePort, TEST_IMAGES } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { criDirect, type CriDirect, type DirectContainer, type DirectPodConfig } from './cri-direct.js';

// Shells that end on SIGTERM, so stops take a second rather than the grace period.
const serve =
  'trap "exit 0" TERM; mkdir -p /www && echo "hello-$MODE" > /www/index.html && httpd -p 80 -h /www; while true; do sleep 1; done';
const idle = 'trap "exit 0" TERM; while true; do sleep 1; done';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('kubelet-ts CLI on containerd over CRI', () => {
  const endpoint = criEndpoint();
  const node = `e2e-cri-${process.pid}`;
  let cri: CriDirect;
  let dir: string;
  let volumes: string;
  /** --pod-logs-dir and --container-log-links-dir. */
  let logs: { pods: string; links: string };
  let port: number;
  let foreign: { sandbox: string; container: string; startedAt: string };
  let agent: AgentProcess | undefined;

  const start = () =>
    new AgentProcess([
      '--runtime',
      'cri',
      '--container-runtime-endpoint',
      endpoint,
      '--config',
      dir,
      '--hostname-override',
      node,
      '--host-ip',
      '127.0.0.1',
      '--volumes-root',
      volumes,
      '--pod-logs-dir',
      logs.pods,
      '--container-log-links-dir',
      logs.links,
      '--sync-frequency',
      '1s',
      '--file-check-frequency',
      '500ms',
      '--log-level',
      'debug',
    ]);

  /** What the agent made, as containerd reports it through CRI (the test's own client). */
  const ours = () => cri.listContainers({ labelSelector: { [Labels.node]: node } });
  const ourSandboxes = () => cri.listPodSandbox({ [Labels.node]: node });
  const byName = async (container: string): Promise<DirectContainer> => {
    const found = (await ours()).filter((c) => c.labels[Labels.containerName] === container);
    expect(found).toHaveLength(1);
    return found[0]!;
  };
  /** A command run in the container through CRI ExecSync; its stdout. */
  const run = async (container: DirectContainer, cmd: string[]) => {
    const r = await cri.execSync(container.id, cmd);
    expect({ cmd, exitCode: r.exitCode, stderr: r.stderr }).toEqual({ cmd, exitCode: 0, stderr: '' });
    return r.stdout;
  };

  beforeAll(async () => {
    // No containerd: fail, saying how to start one (never skip).
    await assertContainerd(endpoint);
    cri = criDirect(endpoint);
    // An image containerd lacks would send the agent to a registry, which this machine has none of.
    for (const image of [TEST_IMAGES.busybox, TEST_IMAGES.pause]) {
      if (!(await cri.hasImage(image)))
        throw new Error(
          `containerd at ${endpoint} lacks the test image ${image}: \`bash scripts/containerd.sh start\` imports it (npm test does)`,
        );
    }
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-cri-'));
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-cri-volumes-'));
    logs = {
      pods: await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-cri-logs-')),
      links: await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-cri-links-')),
    };
    port = await freePort();

    // Someone else's pod on the same containerd, made directly through CRI.
    const config: DirectPodConfig = {
      metadata: { name: `not-ours-${process.pid}`, uid: `not-ours-${process.pid}`, namespace: 'someone-else', attempt: 0 },
      hostname: 'not-ours',
      labels: { purpose: 'foreign' },
      linux: { cgroupParent: criCgroupParent() },
    };
    const sandbox = await cri.runPodSandbox(config);
    foreign = { sandbox, container: '', startedAt: '' };
    foreign.container = await cri.runContainer(sandbox, config, {
      name: 'not-ours',
      image: TEST_IMAGES.busybox,
      command: ['sh', '-c', idle],
      labels: { purpose: 'foreign' },
    });
    foreign.startedAt = (await cri.containerStatus(foreign.container)).startedAt;

    await writeFile(
      join(dir, 'web.yaml'),
      JSON.stringify({
        version: 'v1beta1',
        id: 'web',
        volumes: [{ name: 'content' }],
        containers: [
          {
            name: 'server',
            image: TEST_IMAGES.busybox,
            command: ['sh', '-c', serve],
            workingDir: '/www',
            env: [{ name: 'MODE', value: 'e2e' }],
            ports: [{ containerPort: 80, hostPort: port }],
          },
          {
            name: 'probe',
            image: TEST_IMAGES.busybox,
            command: ['sh', '-c', idle],
            volumeMounts: [{ name: 'content', mountPath: '/content', readOnly: true }],
          },
        ],
      }),
    );
    agent = start();
  }, 60_000);

  afterAll(async () => {
    agent?.kill();
    await agent?.exit;
    if (cri !== undefined) {
      // Removing a sandbox removes its containers.
      const leftovers = [...(await ourSandboxes()).map((s) => s.id), ...(foreign === undefined ? [] : [foreign.sandbox])];
      for (const id of leftovers) {
        await cri.stopPodSandbox(id).catch(() => undefined);
        await cri.removePodSandbox(id).catch(() => undefined);
      }
      cri.close();
    }
    for (const folder of [dir, volumes, logs?.pods, logs?.links])
      if (folder !== undefined) await rm(folder, { recursive: true, force: true });
  });

  it('runs both containers in one sandbox with their env, command, working dir, labels and mounts', async () => {
    await agent!.until(() => agent!.events('ContainerStarted', 'web').length === 2, 'both containers started', 30_000);
    const sandboxes = await ourSandboxes();
    expect(sandboxes).toHaveLength(1);
    expect(sandboxes[0]!).toMatchObject({
      state: 'SANDBOX_READY',
      labels: { [Labels.sandbox]: 'web', [Labels.node]: node, [Labels.source]: 'file' },
    });
    expect(sandboxes[0]!.metadata?.name).toMatch(/^POD--web--[0-9a-f]{8}$/);
    const containers = await ours();
    expect(containers.map((c) => [c.labels[Labels.containerName], c.state, c.podSandboxId]).sort()).toEqual([
      ['probe', 'CONTAINER_RUNNING', sandboxes[0]!.id],
      ['server', 'CONTAINER_RUNNING', sandboxes[0]!.id],
    ]);

    // What runs as the server's PID 1, read from inside it.
    const server = await byName('server');
    expect(server.metadata?.name).toMatch(/^server--web--[0-9a-f]{8}$/);
    expect(server.labels).toMatchObject({
      [Labels.manifestId]: 'web',
      [Labels.containerName]: 'server',
      [Labels.source]: 'file',
      [Labels.node]: node,
    });
    expect(server.labels[Labels.specHash]).toMatch(/^v1-[0-9a-f]{16}$/);
    expect((await run(server, ['sh', '-c', 'tr "\\0" "\\n" </proc/1/environ'])).split('\n')).toContain('MODE=e2e');
    expect((await run(server, ['sh', '-c', 'tr "\\0" "\\n" </proc/1/cmdline'])).split('\n').filter((s) => s !== '')).toEqual([
      'sh',
      '-c',
      serve,
    ]);
    expect((await run(server, ['readlink', '/proc/1/cwd'])).trim()).toBe('/www');

    const probe = await cri.containerStatus((await byName('probe')).id);
    expect(probe.mounts).toEqual([{ containerPath: '/content', hostPath: join(volumes, 'web', 'content'), readonly: true }]);
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

  it('lets one container reach the other on 127.0.0.1 (checked through CRI ExecSync)', async () => {
    const output = await run(await byName('probe'), ['wget', '-q', '-O', '-', 'http://127.0.0.1:80/']);
    expect(output.trim()).toBe('hello-e2e');
  });

  it('mounts a read-only volume read-only', async () => {
    const result = await cri.execSync((await byName('probe')).id, ['touch', '/content/x']);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain('Read-only file system');
  });

  it('adopts the running pod after a SIGKILL and restart: same containers, same sandbox, no restart', async () => {
    // Killed while quiet: a pass after the last change that found nothing to do.
    const seen = agent!.lines.length;
    await agent!.until(
      () => agent!.lines.slice(seen).some((l) => l.msg === 'sync pass' && l['actions'] === 0 && l['held'] === 0),
      'a quiet pass',
      20_000,
    );
    const before = await ours();
    expect(before).toHaveLength(2);
    const sandboxesBefore = (await ourSandboxes()).map((s) => s.id);
    const startedAt = new Map(await Promise.all(before.map(async (c) => [c.id, (await cri.containerStatus(c.id)).startedAt] as const)));
    const killed = await agent!.stop('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');

    agent = start();
    await agent.until(() => agent!.lines.filter((l) => l.msg === 'sync pass').length >= 2, 'two passes after restart', 20_000);
    const acted = agent.lines
      .filter((l) => typeof l['event'] === 'string')
      .map((l) => `${String(l['event'])} ${String(l['podId'])}/${String(l['container'])} (${String(l['reason'])}): ${l.msg}`);
    const after = await ours();
    expect({ ids: after.map((c) => c.id).sort(), sandboxes: (await ourSandboxes()).map((s) => s.id), acted }).toEqual({
      ids: before.map((c) => c.id).sort(),
      sandboxes: sandboxesBefore,
      acted: [],
    });
    for (const c of after) {
      expect(c.state).toBe('CONTAINER_RUNNING');
      expect((await cri.containerStatus(c.id)).startedAt).toBe(startedAt.get(c.id));
    }
  });

  it('leaves nothing of a removed manifest: containers, sandbox, volume and log directories', async () => {
    const sandbox = (await ourSandboxes())[0]!;
    expect(await exists(join(volumes, 'web', 'content'))).toBe(true);
    // The kubelet's layout: one folder for the pod, a file and a link for each container.
    const [folder, ...others] = await readdir(logs.pods);
    expect({ folder, others }).toEqual({ folder: expect.stringMatching(/^default_web_[0-9a-f]{32}$/), others: [] });
    expect((await readdir(join(logs.pods, folder!))).sort()).toEqual(['probe', 'server']);
    expect((await readdir(logs.links)).map((l) => l.replace(/-[0-9a-f]{64}\.log$/, '')).sort()).toEqual([
      'web_default_probe',
      'web_default_server',
    ]);
    await rm(join(dir, 'web.yaml'));
    await agent!.until(() => agent!.events('ContainerRemoved', 'web').length === 2, 'both removed', 30_000);
    await agent!.until(() => agent!.events('SandboxRemoved', 'web').length === 1, 'the sandbox removed', 10_000);
    expect(await ours()).toEqual([]);
    expect(await ourSandboxes()).toEqual([]);
    expect(await cri.listContainers({ podSandboxId: sandbox.id })).toEqual([]);
    expect(await exists(join(volumes, 'web'))).toBe(false);
    expect(await readdir(logs.pods)).toEqual([]);
    expect(await readdir(logs.links)).toEqual([]);
  });

  it('never touched the foreign sandbox and container beside them', async () => {
    const check = async () => {
      expect((await cri.listPodSandbox()).find((s) => s.id === foreign.sandbox)?.state).toBe('SANDBOX_READY');
      const status = await cri.containerStatus(foreign.container);
      expect({ state: status.state, startedAt: status.startedAt }).toEqual({ state: 'CONTAINER_RUNNING', startedAt: foreign.startedAt });
    };
    await check();
    const { code } = await agent!.stop('SIGTERM');
    expect(code).toBe(0);
    await check();
  });
});
