import { fork, spawn, type ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { buildTestImages, removeLabelled, startControlPlane } from '@kubelet-ts/testkit';
import { ms, row, summarise, type Row } from '../stats.js';
import { adminOf, api, apiText, machineAddress, type Admin } from './cluster.js';

export const CLUSTER_STREAMS_SCENARIO = '15. streams through the API server (issue 44)';

const CLI = fileURLToPath(new URL('../../../packages/cli/bin/kubelet-ts.js', import.meta.url));
// The compiled child, whether this module runs from dist/ (npm run bench) or src/ (jest).
const RELAY = fileURLToPath(new URL('../../dist/scenarios/cluster-streams-relay-child.js', import.meta.url));
const NS = 'bench-streams';
const POD = 'streams';
const CONTAINER = 'web';

/** Sizes of scenario 15. */
export interface ClusterStreamsSizes {
  /** Timed exec round trips each way (kubectl through the API server, the CLI straight to the agent), for each Node. */
  readonly execRuns: number;
  /** The file the pod serves, in MiB. */
  readonly forwardMiB: number;
  /** Timed downloads through kubectl port-forward, and as many through the ceiling, for each Node. */
  readonly forwardRuns: number;
}

export const clusterStreamsSizes = (quick: boolean): ClusterStreamsSizes =>
  quick ? { execRuns: 3, forwardMiB: 8, forwardRuns: 1 } : { execRuns: 30, forwardMiB: 64, forwardRuns: 5 };

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
/** The 90th percentile (nearest rank, as `summarise` takes its p95). */
const p90 = (samples: readonly number[]) => [...samples].sort((a, b) => a - b)[Math.ceil(0.9 * samples.length) - 1]!;
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** A port free on 0.0.0.0 a moment ago: the agent's. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });

/** Polls `probe` every 500 ms until it gives a value; fails after `t` ms with what it last threw. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, t = 60_000): Promise<T> {
  const deadline = Date.now() + t;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
      last = undefined;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${t / 1000} s${last === undefined ? '' : ` (last: ${String(last)})`}`);
    await sleep(500);
  }
}

/** A command to its end (60 s at most, then killed): its time in ms; throws with its stderr on a non-zero exit. */
function timed(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const child = spawn(command, [...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      const took = ms(t);
      clearTimeout(timer);
      if (code === 0) resolve(took);
      else reject(new Error(`${command} ${args.join(' ')}: exit ${code}: ${stderr.trim().slice(0, 300)}`));
    });
  });
}

/** Ends a child process: SIGTERM, then SIGKILL after 10 s; safe to call twice. */
async function end(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Downloads `url` over a connection of its own: bytes counted, MB/s (10^6 bytes a second). */
function download(url: string, expected: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const req = get(url, { agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => {
        const took = ms(t);
        if (res.statusCode !== 200 || bytes !== expected)
          return reject(new Error(`GET ${url}: ${res.statusCode}, ${bytes} bytes of ${expected}`));
        resolve(bytes / 1e6 / (took / 1000));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(120_000, () => req.destroy(new Error(`GET ${url}: no end within 120 s`)));
  });
}

/** Tries `step` up to `times`, 1 s apart (the first calls after a restart may meet a node not yet reachable). */
async function eventually<T>(step: () => Promise<T>, times: number): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await step();
    } catch (error) {
      if (i >= times) throw error;
      await sleep(1_000);
    }
  }
}

/**
 * One exec of `true` over WebSocket from this process (no process start): socket opened → status and
 * close, in ms; throws unless the status is Success.
 */
function execSession(url: string, tls: { ca?: string; cert: string; key: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    let status = '';
    const ws = new WebSocket(url, ['v5.channel.k8s.io', 'v4.channel.k8s.io'], {
      ...tls,
      rejectUnauthorized: tls.ca !== undefined,
      perMessageDeflate: false,
    });
    const timer = setTimeout(() => ws.terminate(), 30_000);
    ws.on('message', (data: Buffer) => {
      if (data[0] === 3) status += data.subarray(1).toString('utf8');
    });
    ws.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    ws.once('close', () => {
      const took = ms(t);
      clearTimeout(timer);
      if (status.includes('"Success"')) resolve(took);
      else reject(new Error(`exec over ${new URL(url).host}: status ${status.slice(0, 200) || 'none'}`));
    });
  });
}

/** A process of the relay script (`relay HOST PORT` or `tunnel URL`), once it has said its port. */
async function relayChild(args: readonly string[]): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(RELAY, [...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.on('message', (m) => resolve((m as { port: number }).port));
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the relay child (${args[0]}) exited with ${code} before it listened`)));
  });
  return { child, port };
}

/** A port-forward command (`kubectl port-forward`, `kubelet-ts port-forward`), once it says where it listens. */
async function portForward(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(command, [...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  try {
    const port = await until(`${command} port-forward to listen`, async () => {
      if (child.exitCode !== null) throw new Error(`${command} port-forward exited ${child.exitCode}: ${out}`);
      const found = /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(out)?.[1];
      return found === undefined ? undefined : Number(found);
    });
    return { child, port };
  } catch (error) {
    await end(child);
    throw error;
  }
}

/** `apiserver_websocket_streaming_requests_total` by subresource and how the API server routed it. */
async function routed(admin: Admin): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of (await apiText(admin, '/metrics')).split('\n')) {
    if (!line.startsWith('apiserver_websocket_streaming_requests_total{')) continue;
    const sub = /subresource="([^"]+)"/.exec(line)?.[1];
    const how = /proxy_type="([^"]+)"/.exec(line)?.[1];
    if (sub !== undefined && how !== undefined) counts.set(`${sub} ${how}`, Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

const routedSince = (before: Map<string, number>, after: Map<string, number>) =>
  [...after]
    .map(([key, n]) => [key, n - (before.get(key) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .map(([key, n]) => `${key} ${n}`)
    .join(', ') || 'none counted';

/**
 * Issue 44's figures: `kubectl exec` and `kubectl port-forward` through the testkit's real API
 * server to the agent (the CLI in a process of its own, a node of the cluster on Docker), with the
 * Node declaring ExtendWebSocketsToKubelet (the API server passes the WebSocket through) and not
 * (it translates to SPDY/3.1). Against, in the same run: the same exec through the agent's CLI
 * straight to the agent's port, and the same download through a bare WebSocket relay in Node.
 */
export async function clusterStreams(sizes: ClusterStreamsSizes): Promise<Row[]> {
  const images = await buildTestImages();
  const cluster = await startControlPlane();
  const node = `bench-streams-${process.pid}`;
  const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-cluster-streams-'));
  const address = machineAddress();
  const bytes = sizes.forwardMiB * 1024 * 1024;
  let agent: ChildProcess | undefined;
  let agentErr = '';
  const children: ChildProcess[] = [];
  try {
    const admin = await adminOf(cluster);
    const nodeKubeconfig = await cluster.nodeKubeconfig(node);
    const port = await freePort();
    // The direct route's credentials: a client certificate of the cluster's CA, in system:masters
    // (the agent, with --client-ca-file, takes it; its SubjectAccessReview allows that group everything).
    const userConfig = await readFile(await cluster.userKubeconfig('bench-streams', ['system:masters']), 'utf8');
    const field = (name: string) => Buffer.from(new RegExp(`${name}: (\\S+)`).exec(userConfig)![1]!, 'base64').toString();
    const certFile = join(dir, 'user.pem');
    const keyFile = join(dir, 'user-key.pem');
    await writeFile(certFile, field('client-certificate-data'));
    await writeFile(keyFile, field('client-key-data'), { mode: 0o600 });

    const startAgent = (extra: readonly string[]) => {
      agentErr = '';
      agent = spawn(
        process.execPath,
        [
          CLI,
          '--runtime',
          'docker',
          '--pod-infra-image',
          images.pause,
          '--kubeconfig',
          nodeKubeconfig,
          '--client-ca-file',
          cluster.ca.certFile,
          '--node-ip',
          address,
          '--port',
          String(port),
          '--hostname-override',
          node,
          '--root-dir',
          join(dir, 'agent'),
          '--log-level',
          'warn',
          ...extra,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      // Its warnings and errors (stdout) and whatever it says on stderr, the last 4 kB: what a failure shows.
      const keep = (c: string) => (agentErr = (agentErr + c).slice(-4_000));
      agent.stdout?.setEncoding('utf8').on('data', keep);
      agent.stderr?.setEncoding('utf8').on('data', keep);
    };
    /** The Node Ready, declaring what it should. */
    const nodeReady = (declared: boolean) =>
      until(
        `the node Ready, ${declared ? 'declaring' : 'not declaring'} ExtendWebSocketsToKubelet`,
        async () => {
          if (agent?.exitCode !== null) throw new Error(`the agent exited ${agent?.exitCode}: ${agentErr}`);
          const n = (await api(admin, 'GET', `/api/v1/nodes/${node}`)) as {
            status?: { conditions?: Array<{ type: string; status: string }>; declaredFeatures?: string[] };
          };
          const ready = n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
          const declares = n.status?.declaredFeatures?.includes('ExtendWebSocketsToKubelet') === true;
          return ready && declares === declared ? true : undefined;
        },
        90_000,
      );
    /** The pod Running and ready, and its IP; else what the API last said of it, and the agent's last words. */
    const podIp = async () => {
      let last: unknown;
      try {
        return await until(
          'the pod Running and ready',
          async () => {
            const p = (await api(admin, 'GET', `/api/v1/namespaces/${NS}/pods/${POD}`)) as {
              status?: { phase?: string; podIP?: string; containerStatuses?: Array<{ ready: boolean }> };
            };
            last = p.status;
            return p.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.ready === true ? p.status.podIP : undefined;
          },
          120_000,
        );
      } catch (error) {
        throw new Error(
          `${(error as Error).message}; its status: ${JSON.stringify(last)}; the agent's last words: ${agentErr.slice(-1_500)}`,
        );
      }
    };

    startAgent([]);
    await nodeReady(true);
    await api(admin, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await api(admin, 'POST', `/api/v1/namespaces/${NS}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: POD, namespace: NS },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: CONTAINER,
            image: images.busybox,
            imagePullPolicy: 'IfNotPresent',
            command: ['sh', '-c', `mkdir -p /www && head -c ${bytes} /dev/urandom > /www/big && exec httpd -f -p 8080 -h /www`],
          },
        ],
      },
    });

    const kubectlEnv = { KUBECONFIG: cluster.kubeconfigPath };
    const throughApi = () => timed('kubectl', ['-n', NS, 'exec', POD, '-c', CONTAINER, '--', 'true'], kubectlEnv);
    /** The agent's CLI's flags to reach the agent's port straight, as the cluster's admin-group user. */
    const straight = [
      '--server',
      `https://${address}:${port}`,
      '--insecure-skip-tls-verify',
      '--client-certificate',
      certFile,
      '--client-key',
      keyFile,
      '-n',
      NS,
    ];
    const direct = () => timed(process.execPath, [CLI, 'exec', ...straight, POD, '-c', CONTAINER, '--', 'true']);
    // The round trip alone, from this process: the API server's exec (as the admin) and the agent's.
    const query = `command=true&stdout=1&stderr=1`;
    const apiSession = () =>
      execSession(
        `${admin.server.origin.replace(/^http/, 'ws')}/api/v1/namespaces/${NS}/pods/${POD}/exec?container=${CONTAINER}&${query}`,
        {
          ca: admin.ca,
          cert: admin.cert,
          key: admin.key,
        },
      );
    const directSession = () =>
      execSession(`wss://${address}:${port}/exec/${NS}/${POD}/${CONTAINER}?${query}`, {
        cert: field('client-certificate-data'),
        key: field('client-key-data'),
      });

    const rows: Row[] = [];
    for (const declared of [true, false]) {
      if (!declared) {
        await end(agent);
        startAgent(['--feature-gates', 'ExtendWebSocketsToKubelet=false']);
        await nodeReady(false);
      }
      const ip = await podIp();
      if (ip === undefined || ip === '') throw new Error('the pod has no IP');
      const how = declared
        ? 'the Node declares ExtendWebSocketsToKubelet: the API server passes the WebSocket through'
        : 'the Node declares nothing (--feature-gates ExtendWebSocketsToKubelet=false): the API server translates to SPDY/3.1';
      const label = declared ? 'WebSocket passed through' : 'translated to SPDY/3.1';

      // Exec: three untimed of each first (the agent's paths warm, the node reachable after a restart).
      const before = await routed(admin);
      for (let i = 0; i < 3; i++) {
        await eventually(throughApi, 20);
        await eventually(direct, 20);
        await eventually(apiSession, 20);
        await eventually(directSession, 20);
      }
      const [apiMs, directMs] = [[] as number[], [] as number[]];
      for (let run = 0; run < sizes.execRuns; run++) {
        // Who goes first alternates, so that drift over the run favours neither.
        if (run % 2 === 0) {
          apiMs.push(await throughApi());
          directMs.push(await direct());
        } else {
          directMs.push(await direct());
          apiMs.push(await throughApi());
        }
      }
      const [apiWs, directWs] = [[] as number[], [] as number[]];
      for (let run = 0; run < sizes.execRuns; run++) {
        if (run % 2 === 0) {
          apiWs.push(await apiSession());
          directWs.push(await directSession());
        } else {
          directWs.push(await directSession());
          apiWs.push(await apiSession());
        }
      }
      const execRouted = routedSince(before, await routed(admin));
      rows.push(
        row({
          scenario: CLUSTER_STREAMS_SCENARIO,
          metric: `kubectl exec POD -c C -- true through the API server (${label}): process start → exit`,
          unit: 'ms',
          value: summarise(apiMs),
          baseline: {
            name: "the agent's CLI `kubelet-ts exec` straight to the agent's port (HTTPS, a client certificate)",
            value: summarise(directMs),
          },
          note: `${how}. p90 ${fmt(p90(apiMs))} ms (direct: ${fmt(p90(directMs))} ms); ${sizes.execRuns} runs each, alternating who goes first, after 3 untimed of each; both a process start and a round trip: kubectl is a Go binary (and GETs the pod first), the CLI a Node process (the next row takes the process starts out); the API server counted (apiserver_websocket_streaming_requests_total, with the next row's): ${execRouted}. The real kubelet as baseline does not run beside in this scenario (issue 46 does that)`,
        }),
        row({
          scenario: CLUSTER_STREAMS_SCENARIO,
          metric: `the same exec's round trip alone (${label}): a WebSocket from the bench's process to the API server's pods/exec, opened → status and close`,
          unit: 'ms',
          value: summarise(apiWs),
          baseline: {
            name: "the same WebSocket straight to the agent's /exec (HTTPS, the same client certificate as the CLI)",
            value: summarise(directWs),
          },
          note: `what the API server's hop adds, no process start on either side; p90 ${fmt(p90(apiWs))} ms (direct: ${fmt(p90(directWs))} ms); ${sizes.execRuns} runs each, alternating, after 3 untimed; \`ws\` with v5.channel.k8s.io, stdout and stderr asked for`,
        }),
      );

      // Port-forward: kubectl through the API server, and the ceiling, a bare WebSocket relay to the pod's IP.
      const pfBefore = await routed(admin);
      const forward = await portForward('kubectl', ['-n', NS, 'port-forward', `pod/${POD}`, ':8080'], kubectlEnv);
      children.push(forward.child);
      const own = await portForward(process.execPath, [CLI, 'port-forward', ...straight, POD, ':8080']);
      children.push(own.child);
      const relay = await relayChild(['relay', ip, '8080']);
      children.push(relay.child);
      const tunnel = await relayChild(['tunnel', `ws://127.0.0.1:${relay.port}/`]);
      children.push(tunnel.child);
      const viaApi = () => download(`http://127.0.0.1:${forward.port}/big`, bytes);
      const viaRelay = () => download(`http://127.0.0.1:${tunnel.port}/big`, bytes);
      const viaAgent = () => download(`http://127.0.0.1:${own.port}/big`, bytes);
      // One untimed each: the file written, every path open.
      await eventually(viaApi, 30);
      await eventually(viaRelay, 30);
      await eventually(viaAgent, 30);
      const [apiMBs, relayMBs, agentMBs] = [[] as number[], [] as number[], [] as number[]];
      const ways: Array<[() => Promise<number>, number[]]> = [
        [viaApi, apiMBs],
        [viaRelay, relayMBs],
        [viaAgent, agentMBs],
      ];
      for (let run = 0; run < sizes.forwardRuns; run++)
        // Who goes first turns, so that drift over the run favours none.
        for (let i = 0; i < ways.length; i++) {
          const [way, samples] = ways[(run + i) % ways.length]!;
          samples.push(await way());
        }
      for (const child of [forward.child, own.child, tunnel.child, relay.child]) await end(child);
      const pfRouted = routedSince(pfBefore, await routed(admin));
      const ceiling = {
        name: "ceiling: a bare WebSocket relay in Node (`ws`) dialling the pod's IP over Docker's bridge, and a local TCP listener tunnelling through it",
        value: summarise(relayMBs),
      };
      rows.push(
        row({
          scenario: CLUSTER_STREAMS_SCENARIO,
          metric: `kubectl port-forward through the API server (${label}): HTTP download of ${sizes.forwardMiB} MiB from busybox httpd in the pod`,
          unit: 'MB/s',
          value: summarise(apiMBs),
          baseline: ceiling,
          note: `${how}. A ratio below 1 is the share of the ceiling kept; ${sizes.forwardRuns} downloads each (a connection each, one port-forward process for all), taking turns to go first, after 1 untimed; the ceiling is one WebSocket hop, no SPDY, no API server, no agent, relay and tunnel each a Node process of its own; the API server counted: ${pfRouted}`,
        }),
        row({
          scenario: CLUSTER_STREAMS_SCENARIO,
          metric: `for reference (${label}): the same download without the API server, \`kubelet-ts port-forward\` straight to the agent's port`,
          unit: 'MB/s',
          value: summarise(agentMBs),
          baseline: ceiling,
          note: `where the time goes: the agent's share apart from the API server's (one WebSocket, v4.channel.k8s.io, from the CLI to the agent, which dials the pod through its helper in the pod's network namespace); the agent does not change with the Node's declaration, so the two rows are the same path measured twice; the same turns as the row before`,
        }),
      );
    }
    return rows;
  } finally {
    for (const child of children) await end(child);
    await end(agent);
    await api(await adminOf(cluster), 'DELETE', `/api/v1/namespaces/${NS}`).catch(() => undefined);
    await api(await adminOf(cluster), 'DELETE', `/api/v1/nodes/${node}`).catch(() => undefined);
    await removeLabelled(`io.kubelet-ts.node=${node}`);
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
