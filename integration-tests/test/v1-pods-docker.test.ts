import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels, type KubeletEvent } from '@kubelet-ts/core';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { FileManifestSource } from '@kubelet-ts/source-file';
import { buildTestImages, freePort, TEST_IMAGES } from '@kubelet-ts/testkit';
import { stringify } from 'yaml';

/**
 * Static v1 Pods (issue 15) run by one agent on the real Docker engine, from a directory of YAML
 * files: a hostNetwork web server reached on the host's loopback with nothing published, an
 * emptyDir shared by two containers, liveness and readiness probes, and a DirectoryOrCreate
 * hostPath made on the host and written through.
 */

const NODE = `v1-docker-${process.pid}`;
let work: string;
let runtime: DockerRuntime;
let kubelet: Kubelet;
let hostPort: number;
let probedPort: number;
/** Everything the agent reported: a wait that times out says what the pod went through. */
const events: KubeletEvent[] = [];

const v1Pod = (name: string, spec: object) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'kube-system' }, spec });
const shell = (script: string) => ({ image: TEST_IMAGES.busybox, command: ['sh', '-c'], args: [script] });

beforeAll(async () => {
  const images = await buildTestImages();
  work = await mkdtemp(join(tmpdir(), 'kubelet-ts-v1-docker-'));
  [hostPort, probedPort] = [await freePort(), await freePort()];
  const pods = {
    'hostnet.yaml': v1Pod('hostnet', {
      hostNetwork: true,
      containers: [
        { name: 'web', ...shell(`mkdir -p /www && echo on-the-host > /www/index.html && exec httpd -f -p ${hostPort} -h /www`) },
      ],
    }),
    'shared.yaml': v1Pod('shared', {
      volumes: [{ name: 'scratch', emptyDir: {} }],
      containers: [
        {
          name: 'writer',
          ...shell('echo written-by-writer > /data/file && exec sleep 3600'),
          volumeMounts: [{ name: 'scratch', mountPath: '/data' }],
        },
        { name: 'reader', ...shell('exec sleep 3600'), volumeMounts: [{ name: 'scratch', mountPath: '/data', readOnly: true }] },
      ],
    }),
    // /healthz goes away 4 s after start: liveness fails and the container is restarted, which
    // brings /healthz back. /ready.html is always there: readiness passes once probed.
    'probed.yaml': v1Pod('probed', {
      // httpd as PID 1 ignores SIGTERM: the liveness kill would wait out the default 30 s.
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'web',
          // `;`, not `&&`: `a && b && (sleep…) & exec httpd` sends the whole list to the background, and
          // httpd, started at once, raced mkdir for /www (a lost race exits 1: a crash loop, never ready).
          ...shell(
            'mkdir -p /www; echo ok > /www/ready.html; echo ok > /www/healthz; (sleep 4; rm /www/healthz) & exec httpd -f -p 8080 -h /www',
          ),
          ports: [{ containerPort: 8080, hostPort: probedPort }],
          readinessProbe: { httpGet: { path: '/ready.html', port: 8080 }, periodSeconds: 1 },
          livenessProbe: { httpGet: { path: '/healthz', port: 8080 }, initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: 2 },
        },
      ],
    }),
    'hostpath.yaml': v1Pod('hostpath', {
      volumes: [{ name: 'out', hostPath: { path: join(work, 'made', 'by-agent'), type: 'DirectoryOrCreate' } }],
      containers: [
        { name: 'main', ...shell('echo from-the-pod > /out/file && exec sleep 3600'), volumeMounts: [{ name: 'out', mountPath: '/out' }] },
      ],
    }),
  };
  const manifests = join(work, 'manifests');
  await mkdir(manifests);
  for (const [file, pod] of Object.entries(pods)) await writeFile(join(manifests, file), stringify(pod));
  runtime = new DockerRuntime({ podInfraImage: images.pause, hostIp: '127.0.0.1', volumesRoot: join(work, 'volumes') });
  kubelet = createKubelet({
    runtime,
    sources: [new FileManifestSource({ path: manifests, allowHostMounts: true, allowHostNetwork: true })],
    hostname: NODE,
    syncFrequencyMs: 500,
    allowHostMounts: true,
    allowHostNetwork: true,
    events: { emit: (e) => events.push(e) },
  });
  await kubelet.start();
}, 60_000);

afterAll(async () => {
  await kubelet?.close();
  // The agent leaves its pods running when it closes (as the kubelet does): remove what it made.
  for (const s of (await runtime?.listSandboxes()) ?? [])
    if (s.labels[Labels.node] === NODE) await runtime.removeSandbox(s.id, { volumes: true });
  await rm(work, { recursive: true, force: true });
}, 60_000);

async function until<T>(read: () => Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the agent reported:\n${trail()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The agent's events, one per line, for a timed-out wait to show. */
const trail = () =>
  events
    .map((e) => `${new Date(e.time).toISOString()} ${e.podId ?? '-'} ${e.container ?? '-'} ${e.type} ${e.reason ?? ''} ${e.message ?? ''}`)
    .join('\n');

const container = async (podId: string, name: string) =>
  (await kubelet.pods()).find((p) => p.id === podId)?.containers.find((c) => c.name === name);
const running = async (podId: string, name: string) => {
  const c = await container(podId, name);
  return c?.state === 'running' ? c : undefined;
};

describe('static v1 Pods on Docker', () => {
  it('serves a hostNetwork pod on 127.0.0.1:<its port>, with nothing published', async () => {
    const text = await until(async () => {
      const body = await (await fetch(`http://127.0.0.1:${hostPort}/`)).text();
      return body.includes('on-the-host') ? body : undefined;
    }, 'the host-network server');
    expect(text).toContain('on-the-host');
  }, 60_000);

  it('shares an emptyDir between two containers of a pod', async () => {
    const reader = await until(() => running('shared.kube-system', 'reader'), 'the reader running');
    const seen = await until(async () => {
      const { exitCode, output } = await runtime.exec(reader.id!, ['cat', '/data/file'], 5000);
      return exitCode === 0 ? output : undefined;
    }, 'the file the writer wrote');
    expect(seen.trim()).toBe('written-by-writer');
  }, 60_000);

  it('reports readiness from its probe, and restarts the container when liveness fails', async () => {
    // Ready is a window (from the first readiness success to the liveness kill, about 5 s): the view
    // is polled, and the ContainerReady event, which cannot be missed, counts too.
    const readyEvents = () => events.filter((e) => e.podId === 'probed.kube-system' && e.type === 'ContainerReady').length;
    await until(
      async () => (readyEvents() > 0 || (await running('probed.kube-system', 'web'))?.ready === true ? true : undefined),
      'the container ready',
      45_000,
    );
    expect(readyEvents()).toBeGreaterThanOrEqual(1);
    const restarted = await until(
      async () => {
        const c = await container('probed.kube-system', 'web');
        return c !== undefined && c.restartCount >= 1 ? c : undefined;
      },
      'a liveness restart',
      45_000,
    );
    expect(restarted.restartCount).toBeGreaterThanOrEqual(1);
    // The new container serves /healthz again, and is reported ready again.
    const before = readyEvents();
    await until(
      async () => (readyEvents() > before || (await running('probed.kube-system', 'web'))?.ready === true ? true : undefined),
      'ready again',
    );
  }, 150_000);

  it('makes a DirectoryOrCreate hostPath on the host, and the pod writes through it', async () => {
    const dir = join(work, 'made', 'by-agent');
    const written = await until(
      async () => (await readFile(join(dir, 'file'), 'utf8')).trim() || undefined,
      'the file written through the hostPath',
    );
    expect(written).toBe('from-the-pod');
    expect((await stat(dir)).mode & 0o777).toBe(0o755 & ~process.umask());
  }, 60_000);
});
