import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { networkInterfaces } from 'node:os';
import { fileURLToPath } from 'node:url';
import { buildTestImages, independentDocker, removeLabelled, startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { ms, row, summarise, type Row } from '../stats.js';

export const CLUSTER_SCENARIO = '14. a node of a cluster (issue 43)';

const CLI = fileURLToPath(new URL('../../../packages/cli/bin/kubelet-ts.js', import.meta.url));
const RAW_LABEL = 'io.kubelet-ts.bench-cluster-raw';

/** The admin's credentials and the API server, read from the control plane's kubeconfig. */
export interface Admin {
  readonly server: URL;
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export async function adminOf(cluster: StartedControlPlane): Promise<Admin> {
  const text = await readFile(cluster.kubeconfigPath, 'utf8');
  const field = (name: string) => Buffer.from(new RegExp(`${name}: (\\S+)`).exec(text)![1]!, 'base64').toString();
  return {
    server: new URL(cluster.server),
    ca: field('certificate-authority-data'),
    cert: field('client-certificate-data'),
    key: field('client-key-data'),
  };
}

/**
 * The requests the API server has served from nodes: its API priority and fairness sorts a node's
 * requests (`system:nodes`) into the flow schemas `system-node-high` (its Lease, its Node's status)
 * and `system-nodes` (the rest), so with one node these count that node's requests alone.
 */
export async function nodeRequests(admin: Admin): Promise<number> {
  const text = await apiText(admin, '/metrics');
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('apiserver_flowcontrol_dispatched_requests_total{') && /flow_schema="system-node(s|-high)"/.test(line))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  return total;
}

export function apiText(admin: Admin, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, admin.server), { ca: admin.ca, cert: admin.cert, key: admin.key }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks).toString()));
    });
    req.on('error', reject);
    req.end();
  });
}

/** One request to the API server as the admin; resolves with the parsed answer. */
export function api(admin: Admin, method: string, path: string, body?: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, admin.server),
      {
        method,
        ca: admin.ca,
        cert: admin.cert,
        key: admin.key,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c: Buffer) => chunks.push(c))
          .on('end', () => {
            const text = Buffer.concat(chunks).toString();
            if ((res.statusCode ?? 500) >= 300) return reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`));
            resolve(text === '' ? undefined : JSON.parse(text));
          });
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Watches this node's pods; calls `onRunning(name, at)` the first time a pod is seen Running. Returns the way to stop. */
function watchRunning(admin: Admin, node: string, onRunning: (name: string) => void): () => void {
  const seen = new Set<string>();
  const req = request(
    new URL(`/api/v1/namespaces/default/pods?watch=true&fieldSelector=spec.nodeName%3D${node}`, admin.server),
    { ca: admin.ca, cert: admin.cert, key: admin.key },
    (res) => {
      let buffer = '';
      res.on('data', (c: Buffer) => {
        buffer += c.toString();
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        for (const line of lines) {
          if (line === '') continue;
          const event = JSON.parse(line) as { object: { metadata: { name: string }; status?: { phase?: string } } };
          const name = event.object.metadata.name;
          if (event.object.status?.phase === 'Running' && !seen.has(name)) {
            seen.add(name);
            onRunning(name);
          }
        }
      });
      res.on('error', () => {});
    },
  );
  req.on('error', () => {});
  req.end();
  return () => req.destroy();
}

export function machineAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('no machine address');
}

/** CPU seconds the process has used (user and system), from /proc. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(stat[11]) + Number(stat[12])) / 100;
}

export async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/**
 * The agent as a node of the testkit's control plane, on Docker (the CLI in a process of its own,
 * with a node's kubeconfig): pod startup through the API server (a pod bound to the node created →
 * seen `Running` by a watch), one at a time and 30 at once; against, in the same run, what the
 * engine takes to create and start the same container plus two round trips to the API server (the
 * least a node could add: one to hear of the pod, one to write its status). Then the idle node with
 * 20 pods: its CPU and RSS over 30 s.
 */
export async function clusterStartup(runs: number, batch: number, idlePods: number, idleSeconds: number): Promise<Row[]> {
  const images = await buildTestImages();
  const cluster = await startControlPlane();
  const node = `bench-node-${process.pid}`;
  let agent: ChildProcess | undefined;
  const docker = independentDocker();
  try {
    const admin = await adminOf(cluster);
    agent = spawn(
      process.execPath,
      [
        CLI,
        '--runtime',
        'docker',
        '--pod-infra-image',
        images.pause,
        '--kubeconfig',
        await cluster.nodeKubeconfig(node),
        '--node-ip',
        machineAddress(),
        '--hostname-override',
        node,
        '--port',
        '0',
        '--log-level',
        'warn',
      ],
      { stdio: 'ignore' },
    );
    // The node Ready.
    for (let i = 0; ; i++) {
      const n = (await api(admin, 'GET', `/api/v1/nodes/${node}`).catch(() => undefined)) as
        | { status?: { conditions?: Array<{ type: string; status: string }> } }
        | undefined;
      if (n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) break;
      if (i > 120) throw new Error('the node did not become Ready within 60 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    const pod = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', labels: { bench: 'cluster' } },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 0,
        containers: [{ name: 'main', image: images.busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
      },
    });
    /** Creates `count` pods at once; each one's create → Running, in ms. */
    const startup = async (count: number, round: number): Promise<number[]> => {
      const started = new Map<string, bigint>();
      const took: number[] = [];
      let done!: () => void;
      const all = new Promise<void>((r) => (done = r));
      const stop = watchRunning(admin, node, (name) => {
        const at = started.get(name);
        if (at === undefined) return;
        took.push(ms(at));
        if (took.length === count) done();
      });
      await new Promise((r) => setTimeout(r, 200));
      await Promise.all(
        Array.from({ length: count }, (_, i) => {
          const name = `bench-${round}-${i}`;
          started.set(name, process.hrtime.bigint());
          return api(admin, 'POST', '/api/v1/namespaces/default/pods', pod(name));
        }),
      );
      const timer = setTimeout(() => done(), 120_000);
      await all;
      clearTimeout(timer);
      stop();
      await api(admin, 'DELETE', '/api/v1/namespaces/default/pods?labelSelector=bench%3Dcluster&gracePeriodSeconds=0').catch(
        () => undefined,
      );
      // Gone from the API before the next round.
      for (let i = 0; i < 240; i++) {
        const left = (await api(admin, 'GET', '/api/v1/namespaces/default/pods?labelSelector=bench%3Dcluster')) as { items: unknown[] };
        if (left.items.length === 0) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      if (took.length < count) throw new Error(`${count - took.length} of ${count} pods not seen Running within 120 s`);
      return took;
    };
    /** The baseline: the engine creates and starts the same container, and two API round trips. */
    const raw = async (count: number): Promise<number[]> => {
      const took = await Promise.all(
        Array.from({ length: count }, async () => {
          const t = process.hrtime.bigint();
          const c = await docker.createContainer({ Image: images.busybox, Cmd: ['sleep', '3600'], Labels: { [RAW_LABEL]: '1' } });
          await c.start();
          await api(admin, 'GET', '/api/v1/namespaces/default/pods?limit=1');
          await api(admin, 'GET', '/api/v1/namespaces/default/pods?limit=1');
          return ms(t);
        }),
      );
      await removeLabelled(RAW_LABEL);
      return took;
    };
    const one: number[] = [];
    const oneRaw: number[] = [];
    const many: number[] = [];
    const manyRaw: number[] = [];
    for (let r = 0; r < runs; r++) {
      one.push(...(await startup(1, r)));
      oneRaw.push(...(await raw(1)));
    }
    for (let r = 0; r < Math.max(1, Math.floor(runs / 3)); r++) {
      many.push(...(await startup(batch, 1000 + r)));
      manyRaw.push(...(await raw(batch)));
    }
    const rows: Row[] = [
      row({
        scenario: CLUSTER_SCENARIO,
        metric: 'pod startup through the API server: create → Running seen by a watch, 1 pod',
        unit: 'ms',
        value: summarise(one),
        baseline: { name: 'docker create + start, and 2 API round trips', value: summarise(oneRaw) },
        note: `${runs} pods, one at a time; p99 ${summarise(one).p99.toFixed(0)} ms against ${summarise(oneRaw).p99.toFixed(0)} ms`,
      }),
      row({
        scenario: CLUSTER_SCENARIO,
        metric: `pod startup through the API server: create → Running seen by a watch, ${batch} pods at once`,
        unit: 'ms',
        value: summarise(many),
        baseline: { name: `${batch} × (docker create + start, and 2 API round trips), at once`, value: summarise(manyRaw) },
        note: `p99 ${summarise(many).p99.toFixed(0)} ms against ${summarise(manyRaw).p99.toFixed(0)} ms`,
      }),
    ];
    // The idle node with pods: its CPU and memory while nothing changes.
    await Promise.all(Array.from({ length: idlePods }, (_, i) => api(admin, 'POST', '/api/v1/namespaces/default/pods', pod(`idle-${i}`))));
    for (let i = 0; i < 240; i++) {
      const list = (await api(admin, 'GET', '/api/v1/namespaces/default/pods?labelSelector=bench%3Dcluster')) as {
        items: Array<{ status?: { phase?: string } }>;
      };
      if (list.items.filter((p) => p.status?.phase === 'Running').length === idlePods) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    await new Promise((r) => setTimeout(r, 5_000));
    const cpuBefore = await cpuSeconds(agent.pid!);
    const requestsBefore = await nodeRequests(admin);
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const cpu = ((await cpuSeconds(agent.pid!)) - cpuBefore) / idleSeconds;
    const perMinute = (((await nodeRequests(admin)) - requestsBefore) * 60) / idleSeconds;
    const rss = await rssMb(agent.pid!);
    rows.push(
      row({
        scenario: CLUSTER_SCENARIO,
        metric: `the idle node's CPU with ${idlePods} pods (the agent process, over ${idleSeconds} s)`,
        unit: '% of a core',
        value: summarise([cpu * 100]),
        note: `RSS ${rss.toFixed(1)} MB at the end`,
      }),
      row({
        scenario: CLUSTER_SCENARIO,
        metric: `the idle node's API requests a minute with ${idlePods} pods (the API server's count of node requests, over ${idleSeconds} s)`,
        unit: 'requests/min',
        value: summarise([perMinute]),
        note: 'a Lease renewal every 10 s is 6 a minute; the Node status is written when it changes and every 5 min',
      }),
    );
    await api(admin, 'DELETE', '/api/v1/namespaces/default/pods?labelSelector=bench%3Dcluster&gracePeriodSeconds=0').catch(() => undefined);
    return rows;
  } finally {
    agent?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 2_000));
    await removeLabelled(`io.kubelet-ts.node=${node}`);
    await removeLabelled(RAW_LABEL);
    await cluster.stop();
  }
}
