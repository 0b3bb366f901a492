import { closeSync, openSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { independentDocker, startControlPlane } from '@kubelet-ts/testkit';
import { ms, row, summarise, type Row } from '../stats.js';
import { type Admin, adminOf, api, cpuSeconds, rssMb } from './cluster.js';

export const HOLLOW_SCENARIO = '17. hollow nodes (issue 46)';

/** The controller-manager's and scheduler's client rate in the scenario (their default is 20 a second). */
const CONTROL_PLANE_QPS = 300;

const CLI = fileURLToPath(new URL('../../../packages/cli/bin/kubelet-ts.js', import.meta.url));

/** Each step: this many hollow nodes, and a Deployment of this many pods rolled out over them. */
export interface HollowStep {
  readonly nodes: number;
  readonly pods: number;
  /** How long the idle process is sampled, before the pods and with them (default 30 s). */
  readonly sampleSeconds?: number;
}

export function hollowSteps(quick: boolean): HollowStep[] {
  const given = process.env['KUBELET_TS_BENCH_HOLLOW'];
  if (given !== undefined && given !== '') return JSON.parse(given) as HollowStep[];
  return quick
    ? [{ nodes: 5, pods: 20, sampleSeconds: 3 }]
    : [
        { nodes: 100, pods: 1_000 },
        { nodes: 1_000, pods: 10_000, sampleSeconds: 20 },
      ];
}

/**
 * `kubelet-ts hollow` against the testkit's control plane (kubemark's hollow nodes, this agent's
 * own pod logic on the in-memory runtime): for each step, N nodes started in one process, the time
 * until all are Ready; a Deployment of P pods rolled out over them (create → every replica
 * Available, and each pod's create → Running, p50/p99); the process's RSS and CPU per node once
 * idle; and the API server's own CPU over the rollout (its container's cgroup).
 */
export async function hollow(steps: readonly HollowStep[]): Promise<Row[]> {
  const rows: Row[] = [];
  for (const step of steps) rows.push(...(await hollowStep(step)));
  return rows;
}

async function hollowStep({ nodes, pods, sampleSeconds = 30 }: HollowStep): Promise<Row[]> {
  // The controller-manager's and the scheduler's clients as a scale test sets them (kubemark's
  // clusters raise them too): at the default 20 requests a second, the ReplicaSet controller alone
  // makes 1,000 pods in 50 s, whatever the nodes do.
  const cluster = await startControlPlane({
    controllerManagerFlags: [`--kube-api-qps=${CONTROL_PLANE_QPS}`, `--kube-api-burst=${CONTROL_PLANE_QPS * 2}`],
    schedulerFlags: [`--kube-api-qps=${CONTROL_PLANE_QPS}`, `--kube-api-burst=${CONTROL_PLANE_QPS * 2}`],
  });
  const prefix = `hollow-${process.pid}-`;
  const kubeconfig = await direct(cluster.kubeconfigPath);
  // KUBELET_TS_BENCH_HOLLOW_LOG=<file>: the process's warnings there (why nodes went NotReady); else errors only, not kept.
  const logFile = process.env['KUBELET_TS_BENCH_HOLLOW_LOG'];
  const log = logFile === undefined || logFile === '' ? 'ignore' : openSync(logFile, 'w');
  const child = spawn(
    process.execPath,
    [
      CLI,
      'hollow',
      '--nodes',
      String(nodes),
      '--kubeconfig',
      kubeconfig,
      '--name-prefix',
      prefix,
      '--log-level',
      log === 'ignore' ? 'error' : 'warn',
    ],
    { stdio: ['ignore', log, log] },
  );
  if (typeof log === 'number') closeSync(log);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    const admin = await adminOf(cluster);
    const t0 = process.hrtime.bigint();
    await until(`${nodes} nodes Ready`, 30 * 60_000, async () => (await readyNodes(admin)) >= nodes);
    const readyMs = ms(t0);
    await new Promise((r) => setTimeout(r, sampleSeconds * 300));
    const idle = await usage(child.pid!, sampleSeconds);
    const apiServer = await apiServerCpu(cluster.kubeconfigPath);
    // The rollout: one Deployment, its pods' Running seen in their status.
    const t1 = process.hrtime.bigint();
    const apiBefore = await apiServer();
    const cpuBefore = await cpuSeconds(child.pid!);
    await api(admin, 'POST', '/apis/apps/v1/namespaces/default/deployments', deployment(pods));
    await until(`${pods} replicas Available`, 60 * 60_000, async () => {
      const d = (await api(admin, 'GET', '/apis/apps/v1/namespaces/default/deployments/hollow')) as {
        status?: { availableReplicas?: number };
      };
      return (d.status?.availableReplicas ?? 0) >= pods;
    });
    const rolloutMs = ms(t1);
    const rolloutSeconds = rolloutMs / 1000;
    const apiCpu = ((await apiServer()) - apiBefore) / rolloutSeconds;
    const rolloutCpu = ((await cpuSeconds(child.pid!)) - cpuBefore) / rolloutSeconds;
    const perPod = await podStartups(admin);
    await new Promise((r) => setTimeout(r, sampleSeconds * 300));
    const loaded = await usage(child.pid!, sampleSeconds);
    const at = `${nodes} nodes`;
    return [
      row({
        scenario: HOLLOW_SCENARIO,
        metric: `${at}: started → every Node Ready`,
        unit: 's',
        value: summarise([readyMs / 1000]),
        note: `one process, started 20 at a time`,
      }),
      row({
        scenario: HOLLOW_SCENARIO,
        metric: `${at}: a Deployment of ${pods} pods, created → every replica Available`,
        unit: 's',
        value: summarise([rolloutSeconds]),
        note: `each pod's create → Ready (the API's times, to the second): p50 ${(summarise(perPod).median / 1000).toFixed(0)} s, p99 ${(summarise(perPod).p99 / 1000).toFixed(0)} s; the hollow process used ${(rolloutCpu * 100).toFixed(0)} % of a core, the API server ${(apiCpu * 100).toFixed(0)} %; controller-manager and scheduler at ${CONTROL_PLANE_QPS} requests/s`,
      }),
      row({
        scenario: HOLLOW_SCENARIO,
        metric: `${at}: RSS of the process, idle, per node`,
        unit: 'MB',
        value: summarise([idle.rss / nodes]),
        note: `${idle.rss.toFixed(0)} MB in all before the pods, ${loaded.rss.toFixed(0)} MB with ${pods} pods (${(loaded.rss / nodes).toFixed(2)} MB a node)`,
      }),
      row({
        scenario: HOLLOW_SCENARIO,
        metric: `${at}: CPU of the process, idle, per node`,
        unit: '% of a core',
        value: summarise([(idle.cpu * 100) / nodes]),
        note: `${(idle.cpu * 100).toFixed(1)} % in all before the pods, ${(loaded.cpu * 100).toFixed(1)} % with them`,
      }),
    ];
  } finally {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    await cluster.stop();
  }
}

/**
 * The admin's kubeconfig, its server the API server container's own address on the control plane's
 * network (the name its certificate has, `apiserver`, checked with `tls-server-name`), beside the
 * original. Not the port published on 127.0.0.1: Docker's userland proxy behind it gave up under
 * 1,000 nodes (client-node opens a connection a request), and it is not what is measured here.
 */
async function direct(kubeconfigPath: string): Promise<string> {
  const docker = independentDocker();
  const [container] = await docker.listContainers({ filters: { label: ['io.kubelet-ts.testkit.component=kube-apiserver'] } });
  const networks = Object.values(container?.NetworkSettings?.Networks ?? {}) as Array<{ IPAddress?: string }>;
  const address = networks.find((n) => n.IPAddress !== undefined && n.IPAddress !== '')?.IPAddress;
  if (address === undefined) throw new Error('the API server container has no address on its network');
  const text = await readFile(kubeconfigPath, 'utf8');
  const rewritten = text.replace(
    /server: "?https:\/\/127\.0\.0\.1:\d+"?/,
    `server: "https://${address}:6443"\n    tls-server-name: apiserver`,
  );
  if (rewritten === text) throw new Error(`no 127.0.0.1 server in ${kubeconfigPath}`);
  const path = join(dirname(kubeconfigPath), 'hollow.kubeconfig');
  await writeFile(path, rewritten, { mode: 0o600 });
  return path;
}

async function readyNodes(admin: Admin): Promise<number> {
  const list = (await api(admin, 'GET', '/api/v1/nodes?labelSelector=kubelet-ts.io%2Fhollow%3Dtrue')) as {
    items: Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }>;
  };
  return list.items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
}

/** The process's RSS (MB) and CPU (cores) over `seconds`. */
async function usage(pid: number, seconds: number): Promise<{ rss: number; cpu: number }> {
  const before = await cpuSeconds(pid);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return { rss: await rssMb(pid), cpu: ((await cpuSeconds(pid)) - before) / seconds };
}

/** A reader of the API server container's CPU seconds (its cgroup, through the engine's stats). */
async function apiServerCpu(_kubeconfig: string): Promise<() => Promise<number>> {
  const docker = independentDocker();
  const [container] = await docker.listContainers({ filters: { label: ['io.kubelet-ts.testkit.component=kube-apiserver'] } });
  if (container === undefined) return async () => 0;
  return async () => {
    const stats = (await docker.getContainer(container.Id).stats({ stream: false })) as {
      cpu_stats: { cpu_usage: { total_usage: number } };
    };
    return stats.cpu_stats.cpu_usage.total_usage / 1e9;
  };
}

/** Each pod's create → Running, from its creation time and its Running condition's transition (second resolution). */
async function podStartups(admin: Admin): Promise<number[]> {
  const list = (await api(admin, 'GET', '/api/v1/namespaces/default/pods?labelSelector=app%3Dhollow')) as {
    items: Array<{
      metadata: { creationTimestamp: string };
      status?: { conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }> };
    }>;
  };
  return list.items.flatMap((p) => {
    const ready = p.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True')?.lastTransitionTime;
    return ready === undefined ? [] : [Date.parse(ready) - Date.parse(p.metadata.creationTimestamp)];
  });
}

function deployment(replicas: number): unknown {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'hollow', namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'hollow' } },
      template: {
        metadata: { labels: { app: 'hollow' } },
        spec: {
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'main', image: 'registry.example/app:1', command: ['serve'] }],
        },
      },
    },
  };
}

async function until(what: string, ms: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}
