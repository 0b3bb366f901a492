import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  criCgroupParent,
  criEndpoint,
  freePort,
  startControlPlane,
  startRealKubelet,
  TEST_IMAGES,
  type StartedControlPlane,
} from '@kubelet-ts/testkit';
import { ms, row, summarise, type Row } from '../stats.js';
import { type Admin, adminOf, api, cpuSeconds, machineAddress, nodeRequests, rssMb } from './cluster.js';

export const SIDE_BY_SIDE_SCENARIO = '16. the real kubelet beside it (issue 46)';

const CLI = fileURLToPath(new URL('../../../packages/cli/bin/kubelet-ts.js', import.meta.url));
const LABEL = 'bench=side-by-side';

/** How much of each is measured. */
export interface SideBySideSizes {
  /** Pods started one at a time (and deleted one at a time). */
  readonly runs: number;
  /** Pods started at once. */
  readonly batch: number;
  /** Crashes, each seen and restarted once. */
  readonly crashes: number;
  /** `kubectl logs -f` runs. */
  readonly follows: number;
  /** Pods of the idle node, and how long it is watched. */
  readonly idlePods: number;
  readonly idleSeconds: number;
}

export function sideBySideSizes(quick: boolean): SideBySideSizes {
  return quick
    ? // 12 s: at least one Lease renewal of each (every 10 s), so that no baseline is 0.
      { runs: 1, batch: 3, crashes: 1, follows: 1, idlePods: 3, idleSeconds: 12 }
    : { runs: 10, batch: 30, crashes: 5, follows: 10, idlePods: 30, idleSeconds: 60 };
}

/** What one node agent measured. */
interface Measured {
  readonly one: number[];
  readonly many: number[];
  readonly deletion: number[];
  readonly restart: number[];
  readonly follow: number[];
  readonly idleCpu: number;
  readonly idleRequests: number;
  readonly rss: number;
}

/** A node under measurement: its name, its process, and how to stop it. */
interface Node {
  readonly name: string;
  readonly pid: number;
  stop(): Promise<void>;
}

interface WatchedPod {
  readonly metadata: { readonly name: string };
  readonly status?: {
    readonly phase?: string;
    readonly containerStatuses?: ReadonlyArray<{ readonly restartCount: number; readonly state?: { readonly running?: unknown } }>;
  };
}

/**
 * The real kubelet of the control plane's release and kubelet-ts, each a node of one testkit
 * control plane on the private containerd (one after the other: the kubelet takes every sandbox
 * of its runtime for its own), measured the same way through the API server: pod startup (create
 * → Running seen by a watch) one at a time and `batch` at once, deletion with a 1 s grace (delete
 * → gone from the API), a crash seen and restarted, `kubectl logs -f` to its first line, and the
 * idle node with `idlePods` pods (its CPU, RSS and API requests a minute). Each row is kubelet-ts
 * with the kubelet as its baseline: a ratio above 1 is a row where kubelet-ts is worse.
 */
export async function kubeletSideBySide(sizes: SideBySideSizes): Promise<Row[]> {
  const cluster = await startControlPlane();
  try {
    const admin = await adminOf(cluster);
    const ours = await measure(admin, cluster, sizes, () => startKubeletTs(cluster, `bench-kubelet-ts-${process.pid}`));
    const theirs = await measure(admin, cluster, sizes, () => startKubelet(cluster, `bench-kubelet-${process.pid}`));
    return rowsOf(ours, theirs, sizes);
  } finally {
    await cluster.stop();
  }
}

function rowsOf(ours: Measured, theirs: Measured, sizes: SideBySideSizes): Row[] {
  const atMost = (value: number, baseline: number) => ({ text: 'at most the kubelet’s (ratio ≤ 1)', met: value <= baseline });
  const timed = (metric: string, a: number[], b: number[], note: string): Row => {
    const value = summarise(a);
    const baseline = summarise(b);
    return row({
      scenario: SIDE_BY_SIDE_SCENARIO,
      metric,
      unit: 'ms',
      value,
      baseline: { name: 'the kubelet, the same way', value: baseline },
      target: atMost(value.median, baseline.median),
      note: `p99 ${value.p99.toFixed(0)} ms against ${baseline.p99.toFixed(0)} ms; ${note}`,
    });
  };
  const once = (metric: string, unit: string, a: number, b: number, note: string): Row =>
    row({
      scenario: SIDE_BY_SIDE_SCENARIO,
      metric,
      unit,
      value: summarise([a]),
      baseline: { name: 'the kubelet, the same way', value: summarise([b]) },
      target: atMost(a, b),
      note,
    });
  return [
    timed('pod startup: create → Running seen by a watch, 1 pod', ours.one, theirs.one, `${sizes.runs} pods, one at a time`),
    timed(`pod startup: create → Running seen by a watch, ${sizes.batch} pods at once`, ours.many, theirs.many, 'each pod of the batch'),
    timed('pod deletion with a 1 s grace: delete → gone from the API', ours.deletion, theirs.deletion, `${sizes.runs} pods, one at a time`),
    timed(
      'a crash restarted: the container exits → seen running again by a watch',
      ours.restart,
      theirs.restart,
      `${sizes.crashes} pods; its first exit (no back-off yet); the 2 s the container ran taken off`,
    ),
    timed('kubectl logs -f: the command started → its first line', ours.follow, theirs.follow, `${sizes.follows} runs`),
    once(
      `the idle node's CPU with ${sizes.idlePods} pods (over ${sizes.idleSeconds} s)`,
      '% of a core',
      ours.idleCpu * 100,
      theirs.idleCpu * 100,
      'the agent process alone (the engine not counted)',
    ),
    once(`the idle node's RSS with ${sizes.idlePods} pods`, 'MB', ours.rss, theirs.rss, 'at the end of the idle period'),
    once(
      `the idle node's API requests a minute with ${sizes.idlePods} pods (over ${sizes.idleSeconds} s)`,
      'requests/min',
      ours.idleRequests,
      theirs.idleRequests,
      "the API server's count of node requests (flow schemas system-node-high and system-nodes)",
    ),
  ];
}

async function measure(admin: Admin, cluster: StartedControlPlane, sizes: SideBySideSizes, start: () => Promise<Node>): Promise<Measured> {
  const node = await start();
  try {
    await until(`${node.name} Ready`, 120_000, async () => {
      const n = (await api(admin, 'GET', `/api/v1/nodes/${node.name}`).catch(() => undefined)) as
        | { status?: { conditions?: Array<{ type: string; status: string }> } }
        | undefined;
      return n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    });
    const watch = watchPods(admin, node.name);
    try {
      const one: number[] = [];
      const deletion: number[] = [];
      for (let i = 0; i < sizes.runs; i++) {
        const [took] = await startup(admin, watch, node.name, [`one-${i}`]);
        one.push(took!);
        deletion.push(await deleted(admin, watch, `one-${i}`));
      }
      const many = await startup(
        admin,
        watch,
        node.name,
        Array.from({ length: sizes.batch }, (_, i) => `many-${i}`),
      );
      await clear(admin);
      const restart: number[] = [];
      for (let i = 0; i < sizes.crashes; i++) restart.push(await crashRestart(admin, watch, node.name, `crash-${i}`));
      await clear(admin);
      const follow: number[] = [];
      await startup(admin, watch, node.name, ['talker'], ['sh', '-c', 'echo first line; exec sleep 3600']);
      for (let i = 0; i < sizes.follows; i++) follow.push(await firstLine(cluster, 'talker'));
      await clear(admin);
      // The idle node with pods: its CPU, RSS and API requests while nothing changes.
      await startup(
        admin,
        watch,
        node.name,
        Array.from({ length: sizes.idlePods }, (_, i) => `idle-${i}`),
      );
      await new Promise((r) => setTimeout(r, 5_000));
      const cpuBefore = await cpuSeconds(node.pid);
      const requestsBefore = await nodeRequests(admin);
      await new Promise((r) => setTimeout(r, sizes.idleSeconds * 1000));
      const idleCpu = ((await cpuSeconds(node.pid)) - cpuBefore) / sizes.idleSeconds;
      const idleRequests = (((await nodeRequests(admin)) - requestsBefore) * 60) / sizes.idleSeconds;
      const rss = await rssMb(node.pid);
      // Its pods go while it runs (a kubelet that exits leaves them running).
      await clear(admin);
      return { one, many, deletion, restart, follow, idleCpu, idleRequests, rss };
    } finally {
      watch.close();
    }
  } finally {
    await clear(admin).catch(() => undefined);
    await node.stop();
    await api(admin, 'DELETE', `/api/v1/nodes/${node.name}`).catch(() => undefined);
  }
}

/** Creates the pods, each a busybox sleeping (or `command`), on `node`; each one's create → Running, in ms. */
async function startup(
  admin: Admin,
  watch: PodWatch,
  node: string,
  names: readonly string[],
  command: readonly string[] = ['sleep', '3600'],
): Promise<number[]> {
  return Promise.all(
    names.map(async (name) => {
      const running = watch.next(name, (p) => p.status?.phase === 'Running');
      const t = process.hrtime.bigint();
      await api(admin, 'POST', '/api/v1/namespaces/default/pods', podOf(name, node, command));
      await running;
      return ms(t);
    }),
  );
}

/** Deletes the pod with a 1 s grace; delete → gone from the API (the watch's DELETED), in ms. */
async function deleted(admin: Admin, watch: PodWatch, name: string): Promise<number> {
  const gone = watch.gone(name);
  const t = process.hrtime.bigint();
  await api(admin, 'DELETE', `/api/v1/namespaces/default/pods/${name}?gracePeriodSeconds=1`);
  await gone;
  return ms(t);
}

/**
 * A container that runs 2 s and exits 1 (its pod `Always`): from the watch seeing it running to the
 * watch seeing it running again after its first exit, less the 2 s it ran.
 */
async function crashRestart(admin: Admin, watch: PodWatch, node: string, name: string): Promise<number> {
  const running = (restarts: number) => (p: WatchedPod) => {
    const c = p.status?.containerStatuses?.[0];
    return c !== undefined && c.restartCount >= restarts && c.state?.running !== undefined;
  };
  const first = watch.next(name, running(0));
  const again = watch.next(name, running(1));
  await api(admin, 'POST', '/api/v1/namespaces/default/pods', podOf(name, node, ['sh', '-c', 'sleep 2; exit 1']));
  const t0 = await first;
  const t1 = await again;
  return Number(t1 - t0) / 1e6 - 2_000;
}

/** `kubectl logs -f` of the pod: the command started → its first line on stdout, in ms. */
async function firstLine(cluster: StartedControlPlane, pod: string): Promise<number> {
  const t = process.hrtime.bigint();
  const child: ChildProcess = spawn('kubectl', ['--kubeconfig', cluster.kubeconfigPath, 'logs', '-f', pod], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    return await new Promise<number>((resolve, reject) => {
      let stderr = '';
      child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
      child.stdout!.once('data', () => resolve(ms(t)));
      child.once('exit', (code) => reject(new Error(`kubectl logs -f ${pod} ended (${code}) before a line: ${stderr.slice(0, 300)}`)));
      setTimeout(() => reject(new Error(`kubectl logs -f ${pod}: no line within 30 s`)), 30_000).unref();
    });
  } finally {
    child.kill('SIGKILL');
  }
}

function podOf(name: string, node: string, command: readonly string[]): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { bench: 'side-by-side' } },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: TEST_IMAGES.busybox, imagePullPolicy: 'Never', command }],
    },
  };
}

/** Deletes the scenario's pods and waits until none is left in the API. */
async function clear(admin: Admin): Promise<void> {
  await api(admin, 'DELETE', `/api/v1/namespaces/default/pods?labelSelector=${encodeURIComponent(LABEL)}&gracePeriodSeconds=1`);
  await until('the pods gone', 120_000, async () => {
    const left = (await api(admin, 'GET', `/api/v1/namespaces/default/pods?labelSelector=${encodeURIComponent(LABEL)}`)) as {
      items: unknown[];
    };
    return left.items.length === 0;
  });
}

/** kubelet-ts on the private containerd, a node of `cluster`. */
async function startKubeletTs(cluster: StartedControlPlane, name: string): Promise<Node> {
  const root = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-side-'));
  const child = spawn(
    process.execPath,
    [
      CLI,
      '--runtime',
      'cri',
      '--container-runtime-endpoint',
      criEndpoint(),
      '--cgroup-root',
      criCgroupParent(),
      '--kubeconfig',
      await cluster.nodeKubeconfig(name),
      '--node-ip',
      machineAddress(),
      '--hostname-override',
      name,
      '--client-ca-file',
      cluster.ca.certFile,
      '--root-dir',
      root,
      '--pod-logs-dir',
      join(root, 'pods'),
      '--container-log-links-dir',
      join(root, 'containers'),
      // A port of its own (the Node publishes it): the API server dials it for logs.
      '--port',
      String(await freePort()),
      '--log-level',
      'warn',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    name,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** The real kubelet on the private containerd, a node of `cluster`. */
async function startKubelet(cluster: StartedControlPlane, name: string): Promise<Node> {
  const kubelet = await startRealKubelet({ cluster, nodeName: name, nodeIp: machineAddress() });
  return { name, pid: kubelet.pid, stop: () => kubelet.stop() };
}

/** A watch of one node's pods: promises of the first event a pod matches, and of its deletion. */
interface PodWatch {
  /** When (hrtime) `name` is first seen matching `test`, from now on. */
  next(name: string, test: (pod: WatchedPod) => boolean): Promise<bigint>;
  gone(name: string): Promise<bigint>;
  close(): void;
}

function watchPods(admin: Admin, node: string): PodWatch {
  const waiting: Array<{ name: string; test: (pod: WatchedPod | undefined) => boolean; resolve: (at: bigint) => void }> = [];
  const req = request(
    new URL(`/api/v1/namespaces/default/pods?watch=true&fieldSelector=spec.nodeName%3D${node}`, admin.server),
    { ca: admin.ca, cert: admin.cert, key: admin.key },
    (res) => {
      let buffer = '';
      res.on('data', (c: Buffer) => {
        const at = process.hrtime.bigint();
        buffer += c.toString();
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        for (const line of lines) {
          if (line === '') continue;
          const event = JSON.parse(line) as { type: string; object: WatchedPod };
          const pod = event.type === 'DELETED' ? undefined : event.object;
          for (const w of [...waiting])
            if (w.name === event.object.metadata.name && w.test(pod)) {
              waiting.splice(waiting.indexOf(w), 1);
              w.resolve(at);
            }
        }
      });
      res.on('error', () => {});
    },
  );
  req.on('error', () => {});
  req.end();
  const wait = (name: string, test: (pod: WatchedPod | undefined) => boolean) =>
    new Promise<bigint>((resolve, reject) => {
      waiting.push({ name, test, resolve });
      setTimeout(() => reject(new Error(`${name}: not seen within 120 s`)), 120_000).unref();
    });
  return {
    next: (name, test) => wait(name, (p) => p !== undefined && test(p)),
    gone: (name) => wait(name, (p) => p === undefined),
    close: () => req.destroy(),
  };
}

async function until(what: string, ms: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
