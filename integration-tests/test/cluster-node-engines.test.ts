import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, TcpGate, type StartedControlPlane } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { freePort, machineAddress, nodeFlags, until } from './cluster-helpers.js';
import { AGENT_ENGINES, type AgentEngine } from './agent-engines.js';
import { kubectl } from './kubectl.js';

/**
 * The agent as a node of a real control plane (issue 43): the testkit's kube-apiserver,
 * controller-manager and scheduler, one agent on Docker and one on containerd, each with a node's
 * kubeconfig (`system:node:<name>`, through the Node authorizer and NodeRestriction), read with
 * `kubectl`, a client that is not ours. Each node registers and is Ready, renews its Lease, runs
 * the replicas of a Deployment the scheduler binds to it (their status written back: Running, the
 * pod IP), replaces them on a rollout restart, lets them go on a scale to 0 once their preStop hook
 * ran, and says why it cannot run a pod it cannot.
 */

let cluster: StartedControlPlane;
/** Where the objects the tests apply are written. */
let dir: string;
const k = async (...args: string[]) => (await kubectl(['--kubeconfig', cluster.kubeconfigPath, ...args])).stdout;
const json = async <T>(...args: string[]) => JSON.parse(await k(...args, '-o', 'json')) as T;
type ApiEvent = { reason: string; type: string; reportingController: string; regarding: { kind: string; name: string; uid?: string } };
/** The events.k8s.io/v1 events of a namespace regarding `name`. */
const eventsOf = async (namespace: string, name: string) =>
  (await json<{ items: ApiEvent[] }>('get', 'events.v1.events.k8s.io', '-n', namespace)).items.filter((e) => e.regarding.name === name);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-cluster-'));
  // A node whose Lease is 10 s old is NotReady: the agents here renew every 2 s (a Lease of 8 s).
  cluster = await startControlPlane({ nodeMonitorGracePeriodSeconds: 10 });
}, 240_000);

afterAll(async () => {
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

type Pod = {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: { phase?: string; podIP?: string; reason?: string; message?: string; containerStatuses?: Array<{ ready: boolean }> };
};

describe.each(AGENT_ENGINES)('a kubelet-ts node of a real control plane, on $name', (engine: AgentEngine) => {
  const node = `e2e-node-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
  const app = `web-${engine.name.split(' ')[0]!.toLowerCase()}`;
  let agent: AgentProcess | undefined;
  let busybox: string;
  let port: number;
  let flags: string[];

  const podsOf = async (label: string) =>
    (await json<{ items: Pod[] }>('get', 'pods', '-n', 'default', '-l', `app=${label}`)).items.filter((p) => p.spec.nodeName === node);

  beforeAll(async () => {
    const prepared = await engine.prepare();
    busybox = prepared.busybox;
    port = await freePort();
    const kubeconfig = await cluster.nodeKubeconfig(node);
    // A static pod, beside the API's: its mirror pod carries it in the API.
    const staticDir = await mkdtemp(join(dir, `${app}-static-`));
    await writeFile(
      join(staticDir, 'static.yaml'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `${app}-static`, namespace: 'default', labels: { tier: 'static' } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'main', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
        },
      }),
    );
    flags = [
      ...prepared.flags,
      ...nodeFlags(kubeconfig, node, port),
      '--node-lease-duration-seconds',
      '8',
      // The replicas' preStop hooks write to a folder of the host, to prove they ran.
      '--allow-host-mounts',
      '--config',
      staticDir,
      '--register-with-taints',
      'e2e=yes:PreferNoSchedule',
    ];
    agent = new AgentProcess(flags);
    await agent.serverUrl();
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await k('delete', 'deployment', app, '-n', 'default', '--ignore-not-found', '--wait=false').catch(() => undefined);
    await k('delete', 'node', node, '--ignore-not-found').catch(() => undefined);
    await engine.cleanUp(node);
  });

  it('registers its Node, Ready, with the kubelet’s labels, capacity, addresses and daemon endpoint', async () => {
    const ready = await until('the node Ready', async () => {
      const n = await json<{
        metadata: { labels: Record<string, string> };
        spec: { taints?: Array<{ key: string; value?: string; effect: string }> };
        status: {
          conditions: Array<{ type: string; status: string; reason: string }>;
          capacity: Record<string, string>;
          allocatable: Record<string, string>;
          addresses: Array<{ type: string; address: string }>;
          daemonEndpoints: { kubeletEndpoint: { Port: number } };
          nodeInfo: Record<string, string>;
          images?: Array<{ names: string[]; sizeBytes: number }>;
        };
      }>('get', 'node', node);
      return n.status.conditions.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
    });
    expect(ready.metadata.labels).toMatchObject({ 'kubernetes.io/hostname': node, 'kubernetes.io/os': 'linux' });
    // Beside the controller-manager's own, which come and go (node.kubernetes.io/not-ready until Ready).
    expect(ready.spec.taints).toEqual(expect.arrayContaining([{ key: 'e2e', value: 'yes', effect: 'PreferNoSchedule' }]));
    expect(ready.status.conditions.map((c) => [c.type, c.status, c.reason]).sort()).toEqual([
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'],
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
      ['Ready', 'True', 'KubeletReady'],
    ]);
    expect(ready.status.capacity).toMatchObject({ pods: '110', cpu: expect.stringMatching(/^\d+$/) });
    expect(ready.status.allocatable['memory']).toMatch(/^\d+Ki$/);
    expect(ready.status.addresses).toEqual([
      { type: 'InternalIP', address: machineAddress() },
      { type: 'Hostname', address: node },
    ]);
    expect(ready.status.daemonEndpoints.kubeletEndpoint.Port).toBe(port);
    // The engine's images, busybox among them, each with its size.
    expect(ready.status.images?.some((i) => i.names.some((n) => n === busybox || n.endsWith(`/${busybox}`)) && i.sizeBytes > 0)).toBe(true);
    expect(ready.status.nodeInfo).toMatchObject({
      kubeletVersion: 'v1.37.0+kubelet-ts.0.1.0',
      operatingSystem: 'linux',
      containerRuntimeVersion: expect.stringMatching(/^(docker|containerd):\/\/\d/),
    });
    // kubectl's own table says it too.
    expect(await k('get', 'nodes', node, '--no-headers')).toMatch(new RegExp(`^${node}\\s+Ready\\s`));
    // And the node said it started and is ready, as the kubelet's recorder says it.
    const said = await until(
      'the node’s events',
      async () => {
        const events = await eventsOf('default', node);
        return events.length >= 2 ? events : undefined;
      },
      20_000,
    );
    expect(said.map((e) => [e.regarding.kind, e.reason, e.reportingController])).toEqual(
      expect.arrayContaining([
        ['Node', 'Starting', 'kubelet'],
        ['Node', 'NodeReady', 'kubelet'],
      ]),
    );
  }, 90_000);

  it('renews its Lease in kube-node-lease, owned by its Node', async () => {
    const lease = () =>
      json<{ metadata: { ownerReferences: Array<{ kind: string; name: string }> }; spec: { holderIdentity: string; renewTime: string } }>(
        'get',
        'lease',
        node,
        '-n',
        'kube-node-lease',
      );
    const first = await until('the Lease', lease);
    expect(first.spec.holderIdentity).toBe(node);
    expect(first.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: node })]);
    // Renewed every quarter of its 8 s.
    const later = await until(
      'a renewal',
      async () => {
        const l = await lease();
        return l.spec.renewTime !== first.spec.renewTime ? l : undefined;
      },
      15_000,
    );
    expect(Date.parse(later.spec.renewTime)).toBeGreaterThan(Date.parse(first.spec.renewTime));
  }, 30_000);

  it('runs a Deployment’s replicas bound to it, Running with their pod IPs; replaces them on a rollout restart; lets them go on a scale to 0 after preStop', async () => {
    const hooks = await mkdtemp(join(dir, `${app}-prestop-`));
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: app, namespace: 'default' },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app } },
        template: {
          metadata: { labels: { app } },
          spec: {
            nodeSelector: { 'kubernetes.io/hostname': node },
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 5,
            volumes: [{ name: 'out', hostPath: { path: hooks, type: 'Directory' } }],
            containers: [
              {
                name: 'main',
                image: busybox,
                imagePullPolicy: 'IfNotPresent',
                command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 0.2; done"],
                volumeMounts: [{ name: 'out', mountPath: '/out' }],
                lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo "$HOSTNAME" >> /out/prestop'] } } },
              },
            ],
          },
        },
      },
    };
    const file = join(dir, `${app}.json`);
    await writeFile(file, JSON.stringify(deployment));
    await k('apply', '-f', file);
    const running = await until(
      '3 replicas Running on the node',
      async () => {
        const pods = await podsOf(app);
        return pods.length === 3 && pods.every((p) => p.status.phase === 'Running' && p.status.podIP !== undefined) ? pods : undefined;
      },
      90_000,
    );
    expect(new Set(running.map((p) => p.status.podIP)).size).toBe(3);
    // Each pod's events, with the kubelet's reasons, regarding it by its uid.
    const told = await until(
      'Created and Started recorded',
      async () => {
        const events = await eventsOf('default', running[0]!.metadata.name);
        return ['Created', 'Started'].every((r) => events.some((e) => e.reason === r)) ? events : undefined;
      },
      20_000,
    );
    // The scheduler's `Scheduled` is there too; the node's own regard the pod by its uid.
    const ours = told.filter((e) => e.reportingController === 'kubelet');
    expect(ours.map((e) => e.reason)).toEqual(expect.arrayContaining(['Created', 'Started']));
    expect(ours.every((e) => e.regarding.uid === running[0]!.metadata.uid)).toBe(true);
    expect(told.some((e) => e.reason === 'Scheduled')).toBe(true);
    expect(await k('get', 'pods', '-l', `app=${app}`, '-o', 'wide', '--no-headers')).toMatch(new RegExp(`Running.*${node}`));

    // A rollout restart: new pods (new uids) run, the old ones' containers go.
    const oldUids = running.map((p) => p.metadata.uid);
    await k('rollout', 'restart', `deployment/${app}`);
    await k('rollout', 'status', `deployment/${app}`, '--timeout=90s');
    const replaced = await until(
      '3 new replicas Running, the old gone',
      async () => {
        const pods = await podsOf(app);
        return pods.length === 3 && pods.every((p) => !oldUids.includes(p.metadata.uid) && p.status.phase === 'Running') ? pods : undefined;
      },
      90_000,
    );
    expect(replaced).toHaveLength(3);
    await until(
      'the old pods’ containers gone from the engine',
      async () => {
        const made = await engine.labelled(node);
        return made.some((m) => oldUids.includes(m.labels['io.kubernetes.pod.uid']!)) ? undefined : true;
      },
      60_000,
    );

    // Scaled to 0: each pod stops within its grace, its preStop hook first, and leaves the API.
    await k('scale', `deployment/${app}`, '--replicas=0');
    await until('no replica left in the API', async () => ((await podsOf(app)).length === 0 ? true : undefined), 60_000);
    // Each of the six pods (three replaced by the restart, three scaled away) ran its hook before it stopped.
    const stopped = (await readFile(join(hooks, 'prestop'), 'utf8')).trim().split('\n');
    expect(stopped).toHaveLength(6);
    expect(new Set(stopped).size).toBe(6);
    expect(agent!.events('PodTerminated').length).toBeGreaterThanOrEqual(6);
  }, 300_000);

  it('runs a Job to Complete (its pod Succeeded), and shows a crashing container in CrashLoopBackOff with its restarts', async () => {
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: `${app}-job`, namespace: 'default' },
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { labels: { app: `${app}-job` } },
          spec: {
            nodeSelector: { 'kubernetes.io/hostname': node },
            automountServiceAccountToken: false,
            restartPolicy: 'Never',
            containers: [{ name: 'main', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'sleep 1; exit 0'] }],
          },
        },
      },
    };
    const crasher = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${app}-crash`, namespace: 'default', labels: { app: `${app}-crash` } },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        containers: [{ name: 'main', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'exit 3'] }],
      },
    };
    await writeFile(join(dir, `${app}-job.json`), JSON.stringify(job));
    await writeFile(join(dir, `${app}-crash.json`), JSON.stringify(crasher));
    await k('apply', '-f', join(dir, `${app}-job.json`), '-f', join(dir, `${app}-crash.json`));
    await k('wait', '--for=condition=complete', `job/${app}-job`, '-n', 'default', '--timeout=60s');
    const [done] = await podsOf(`${app}-job`);
    expect(done?.status.phase).toBe('Succeeded');
    let shown = '';
    const table = await until(
      'CrashLoopBackOff with restarts',
      async () => {
        shown = await k('get', 'pod', `${app}-crash`, '-n', 'default', '--no-headers');
        return /CrashLoopBackOff\s+[1-9]/.test(shown) ? shown : undefined;
      },
      // A deadline, not a measure: a loaded machine's containerd has taken more than 60 s here.
      120_000,
    ).catch(async (error: unknown) => {
      const status = await k('get', 'pod', `${app}-crash`, '-n', 'default', '-o', 'jsonpath={.status}').catch(String);
      throw new Error(`${(error as Error).message}; kubectl showed: ${shown.trim()}; its status: ${status}`);
    });
    expect(table).toMatch(new RegExp(`^${app}-crash\\s+0/1\\s+CrashLoopBackOff\\s+[1-9]`));
    const backOff = await until('BackOff recorded', async () =>
      (await eventsOf('default', `${app}-crash`)).find((e) => e.reason === 'BackOff'),
    );
    expect(backOff.type).toBe('Warning');
    await k('delete', `job/${app}-job`, `pod/${app}-crash`, '-n', 'default', '--wait=false', '--cascade=background');
    await until('the crashing pod gone from the API', async () => ((await podsOf(`${app}-crash`)).length === 0 ? true : undefined), 60_000);
  }, 240_000);

  it('has a mirror pod for its static pod, owned by its Node and Running; one deleted is made again', async () => {
    type Mirror = Pod & { metadata: { annotations: Record<string, string>; ownerReferences: Array<{ kind: string; name: string }> } };
    const mirrorName = `${app}-static-${node}`;
    const mirror = await until(
      'the mirror pod Running',
      async () => {
        const p = await json<Mirror>('get', 'pod', mirrorName, '-n', 'default');
        return p.status.phase === 'Running' ? p : undefined;
      },
      60_000,
    );
    expect(mirror.metadata.annotations['kubernetes.io/config.mirror']).toMatch(/^[0-9a-f]{32}$/);
    expect(mirror.metadata.annotations['kubernetes.io/config.source']).toBe('file');
    expect(mirror.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: node })]);
    expect(mirror.spec.nodeName).toBe(node);
    expect(mirror.status.containerStatuses?.[0]?.ready).toBe(true);
    await k('delete', 'pod', mirrorName, '-n', 'default', '--wait=false');
    const again = await until(
      'the mirror pod made again',
      async () => {
        const p = await json<Mirror>('get', 'pod', mirrorName, '-n', 'default');
        return p.metadata.uid !== mirror.metadata.uid && p.status.phase === 'Running' ? p : undefined;
      },
      60_000,
    );
    expect(again.metadata.annotations['kubernetes.io/config.mirror']).toBe(mirror.metadata.annotations['kubernetes.io/config.mirror']);
    // The static pod itself ran on: deleting its mirror stops nothing.
    expect(agent!.events('ContainerKilled', `${app}-static`)).toEqual([]);
  }, 90_000);

  it('says in the pod’s status why it cannot run a pod (Failed, the field)', async () => {
    // The host's process namespace, which this node (no --allow-privileged) refuses by field; the API server takes it.
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${app}-token`, namespace: 'default' },
      spec: {
        nodeName: node,
        hostPID: true,
        automountServiceAccountToken: false,
        containers: [{ name: 'main', image: busybox, command: ['sleep', '3600'] }],
      },
    };
    const file = join(dir, `${app}-token.json`);
    await writeFile(file, JSON.stringify(pod));
    await k('apply', '-f', file);
    const failed = await until(
      'the pod Failed with the field',
      async () => {
        const p = await json<Pod>('get', 'pod', `${app}-token`, '-n', 'default');
        return p.status.phase === 'Failed' ? p : undefined;
      },
      30_000,
    );
    expect(failed.status.reason).toBe('UnsupportedPodSpec');
    expect(failed.status.message).toMatch(/^Pod was rejected: spec\.hostPID: /);
    await k('delete', 'pod', `${app}-token`, '-n', 'default', '--wait=false');
  }, 60_000);

  it('goes NotReady when stopped (its Lease runs out), and Ready again when started, adopting its containers with no restart', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${app}-steady`, namespace: 'default', labels: { app: `${app}-steady` } },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        automountServiceAccountToken: false,
        containers: [{ name: 'main', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
      },
    };
    await writeFile(join(dir, `${app}-steady.json`), JSON.stringify(pod));
    await k('apply', '-f', join(dir, `${app}-steady.json`));
    const [running] = await until('the pod Running', async () => {
      const pods = await podsOf(`${app}-steady`);
      return pods[0]?.status.phase === 'Running' ? pods : undefined;
    });
    const before = (await engine.labelled(node)).filter((m) => m.labels['io.kubernetes.pod.uid'] === running!.metadata.uid);
    const ready = async () =>
      (await json<{ status: { conditions: Array<{ type: string; status: string }> } }>('get', 'node', node)).status.conditions.find(
        (c) => c.type === 'Ready',
      )?.status;
    await agent!.stop();
    // The controller-manager waits 10 s (--node-monitor-grace-period, above) after the last renewal.
    await until('the node NotReady', async () => ((await ready()) === 'Unknown' ? true : undefined), 60_000);
    agent = new AgentProcess(flags);
    await agent.serverUrl();
    await until('the node Ready again', async () => ((await ready()) === 'True' ? true : undefined), 60_000);
    await until('the pod Running again', async () => ((await podsOf(`${app}-steady`))[0]?.status.phase === 'Running' ? true : undefined));
    const after = (await engine.labelled(node)).filter((m) => m.labels['io.kubernetes.pod.uid'] === running!.metadata.uid);
    expect(after.map((m) => m.id).sort()).toEqual(before.map((m) => m.id).sort());
    expect(agent.events('ContainerStarted')).toEqual([]);
    await k('delete', 'pod', `${app}-steady`, '-n', 'default', '--wait=false');
    await until('the pod gone from the API', async () => ((await podsOf(`${app}-steady`)).length === 0 ? true : undefined));
  }, 180_000);
});

describe('two kubelet-ts nodes of one control plane, one on Docker and one on containerd', () => {
  const agents: AgentProcess[] = [];
  const nodes = AGENT_ENGINES.map((e) => `e2e-pair-${e.name.split(' ')[0]!.toLowerCase()}-${process.pid}`);

  beforeAll(async () => {
    for (const [i, engine] of AGENT_ENGINES.entries()) {
      const prepared = await engine.prepare();
      const agent = new AgentProcess([
        ...prepared.flags,
        '--kubeconfig',
        await cluster.nodeKubeconfig(nodes[i]!),
        '--node-ip',
        machineAddress(),
        '--hostname-override',
        nodes[i]!,
        '--sync-frequency',
        '1s',
      ]);
      agents.push(agent);
      await agent.serverUrl();
    }
  }, 120_000);

  afterAll(async () => {
    for (const agent of agents) await agent.stop();
    await k('delete', 'deployment', 'spread', '-n', 'default', '--ignore-not-found', '--wait=false').catch(() => undefined);
    for (const [i, engine] of AGENT_ENGINES.entries()) {
      await k('delete', 'node', nodes[i]!, '--ignore-not-found').catch(() => undefined);
      await engine.cleanUp(nodes[i]!);
    }
  });

  it('has the scheduler spread a Deployment across them, and each runs its share', async () => {
    const busybox = (await AGENT_ENGINES[0]!.prepare()).busybox;
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'spread', namespace: 'default' },
      spec: {
        replicas: 4,
        selector: { matchLabels: { app: 'spread' } },
        template: {
          metadata: { labels: { app: 'spread' } },
          spec: {
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: nodes }] }],
                },
              },
            },
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: 'kubernetes.io/hostname',
                whenUnsatisfiable: 'DoNotSchedule',
                labelSelector: { matchLabels: { app: 'spread' } },
              },
            ],
            containers: [{ name: 'main', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
          },
        },
      },
    };
    await writeFile(join(dir, 'spread.json'), JSON.stringify(deployment));
    await k('apply', '-f', join(dir, 'spread.json'));
    const pods = await until(
      '4 replicas Running',
      async () => {
        const items = (await json<{ items: Pod[] }>('get', 'pods', '-n', 'default', '-l', 'app=spread')).items;
        return items.length === 4 && items.every((p) => p.status.phase === 'Running') ? items : undefined;
      },
      90_000,
    );
    expect(pods.map((p) => p.spec.nodeName).sort()).toEqual([nodes[0], nodes[0], nodes[1], nodes[1]].sort());
    // Each node runs its own share, on its own engine.
    for (const [i, engine] of AGENT_ENGINES.entries()) {
      const made = (await engine.labelled(nodes[i]!)).filter(
        (m) => m.kind === 'container' && m.labels['io.kubernetes.pod.namespace'] === 'default',
      );
      expect(new Set(made.map((m) => m.labels['io.kubernetes.pod.uid'])).size).toBe(2);
    }
  }, 150_000);
});

describe('a kubelet-ts node that loses the API server, on Docker', () => {
  const engine = AGENT_ENGINES[0]!;
  const node = `e2e-gate-${process.pid}`;
  let agent: AgentProcess | undefined;
  let gate: TcpGate;
  let busybox: string;

  const bound = (name: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'gated' } },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
  });
  const phaseOf = async (name: string) => (await json<Pod>('get', 'pod', name, '-n', 'default')).status.phase;

  beforeAll(async () => {
    const prepared = await engine.prepare();
    busybox = prepared.busybox;
    // The node reaches the API server through a gate the test can cut.
    gate = await TcpGate.listen(cluster.server.replace('https:', 'http:'));
    const direct = await readFile(await cluster.nodeKubeconfig(node), 'utf8');
    const gated = join(dir, 'gated.kubeconfig');
    await writeFile(gated, direct.replace(cluster.server, gate.endpoint.replace('http:', 'https:')));
    agent = new AgentProcess([
      ...prepared.flags,
      '--kubeconfig',
      gated,
      '--node-ip',
      machineAddress(),
      '--hostname-override',
      node,
      '--sync-frequency',
      '1s',
    ]);
    await agent.serverUrl();
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await gate?.close();
    await k('delete', 'pods', '-n', 'default', '-l', 'app=gated', '--wait=false').catch(() => undefined);
    await k('delete', 'node', node, '--ignore-not-found').catch(() => undefined);
    await engine.cleanUp(node);
  });

  it('keeps its pods running while the API server is unreachable, and runs what was bound meanwhile once it is back', async () => {
    await writeFile(join(dir, 'gated-1.json'), JSON.stringify(bound('gated-1')));
    await k('apply', '-f', join(dir, 'gated-1.json'));
    await until('gated-1 Running', async () => ((await phaseOf('gated-1')) === 'Running' ? true : undefined), 60_000);
    const before = (await engine.labelled(node)).filter((m) => m.kind === 'container').map((m) => m.id);
    expect(before).toHaveLength(1);

    gate.cut();
    // Bound while the node cannot see it: the node keeps its last good set and says it cannot reach the API.
    await writeFile(join(dir, 'gated-2.json'), JSON.stringify(bound('gated-2')));
    await k('apply', '-f', join(dir, 'gated-2.json'));
    await agent!.until(
      () => agent!.events('SourceError').some((l) => String(l['source']) === 'api'),
      'the source to say the API is unreachable',
      30_000,
    );
    await new Promise((r) => setTimeout(r, 3_000));
    const during = (await engine.labelled(node)).filter((m) => m.kind === 'container').map((m) => m.id);
    expect(during).toEqual(before);

    gate.restore();
    await until('gated-2 Running once the API is back', async () => ((await phaseOf('gated-2')) === 'Running' ? true : undefined), 60_000);
    const after = (await engine.labelled(node)).filter((m) => m.kind === 'container');
    expect(after).toHaveLength(2);
    expect(after.map((m) => m.id)).toEqual(expect.arrayContaining(before));
    expect(await phaseOf('gated-1')).toBe('Running');
  }, 180_000);
});
