import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane, type StartedControlPlane, type StartedMetricsServer } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { AGENT_ENGINES, type AgentEngine } from './agent-engines.js';
import { freePort, machineAddress, nodeFlags, until } from './cluster-helpers.js';

/**
 * The node's port as a cluster reaches it (issue 44): `kubectl logs`, `exec`, `attach`, `cp`,
 * `port-forward` and `top`, the real kubectl through the testkit's real kube-apiserver (and a real
 * metrics-server), to an agent on Docker and one on containerd. The agent serves HTTPS with its
 * self-signed certificate, trusts the API server's client certificate through --client-ca-file,
 * and asks the cluster who else may call it (TokenReview, SubjectAccessReview). Each stream is
 * tried both ways the API server sends it: passed through as WebSocket (the Node declares
 * ExtendWebSocketsToKubelet), and translated to SPDY/3.1 (it does not).
 */

const TTY_SCRIPT = fileURLToPath(new URL('./terminal.py', import.meta.url));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A command to its end (or `ms`, then killed), with `input` on its stdin; never throws on a non-zero exit. */
function run(
  command: string,
  args: readonly string[],
  options: { input?: string; ms?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { stdio: 'pipe', env: { ...process.env, ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.ms ?? 60_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(
        (error as NodeJS.ErrnoException).code === 'ENOENT'
          ? new Error(`${command} is not on PATH: the machine image has kubectl 1.32 and python3; install them to run these tests`)
          : error,
      );
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** A long-running command (kubectl logs -f, port-forward, attach): its output so far, stdin, and stop(). */
function start(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(command, [...args], { stdio: 'pipe', env: { ...process.env, ...env } });
  const out = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out.stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out.stderr += c));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    out,
    stdin: child.stdin,
    closed,
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await closed;
      clearTimeout(timer);
    },
  };
}

/** One HTTPS request to the agent's port, trusting its self-signed certificate; the status and body. */
function callAgent(url: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { rejectUnauthorized: false, agent: false, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

let cluster: StartedControlPlane;
let metricsServer: StartedMetricsServer;
let dir: string;
const kubectlEnv = () => ({ KUBECONFIG: cluster.kubeconfigPath });
/** kubectl as the cluster's admin; throws with its stderr on a non-zero exit. */
const k = async (...args: string[]) => {
  const r = await run('kubectl', args, { env: kubectlEnv() });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};
const apply = async (name: string, object: unknown) => {
  const file = join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify(object));
  await k('apply', '-f', file);
};

/** `apiserver_websocket_streaming_requests_total` of the API server: how it routed each stream. */
async function routed(subresource: string, proxyType: 'proxied_to_kubelet' | 'translated_at_apiserver'): Promise<number> {
  const metrics = await k('get', '--raw', '/metrics');
  const line = metrics
    .split('\n')
    .find(
      (l) =>
        l.startsWith('apiserver_websocket_streaming_requests_total{') &&
        l.includes(`subresource="${subresource}"`) &&
        l.includes(`proxy_type="${proxyType}"`),
    );
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-streams-'));
  cluster = await startControlPlane();
  metricsServer = await cluster.startMetricsServer();
}, 300_000);

afterAll(async () => {
  await metricsServer?.stop();
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe.each(AGENT_ENGINES)('kubectl through the API server to a kubelet-ts node on $name', (engine: AgentEngine) => {
  const short = engine.name.split(' ')[0]!.toLowerCase();
  const node = `streams-${short}-${process.pid}`;
  const ns = `streams-${short}`;
  let agent: AgentProcess | undefined;
  let flags: string[];
  let port: number;
  let busybox: string;

  const startAgent = async (extra: readonly string[] = []) => {
    agent = new AgentProcess([...flags, ...extra]);
    await agent.serverUrl();
  };
  const ready = () =>
    until('the node Ready', async () => {
      const n = JSON.parse(await k('get', 'node', node, '-o', 'json')) as {
        status: { conditions: Array<{ type: string; status: string }>; declaredFeatures?: string[] };
      };
      return n.status.conditions.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
    });
  const kn = (...args: string[]) => k('-n', ns, ...args);

  /** The pod Running, every container ready, "once" in its second life. */
  const podReady = () =>
    until(
      'the pod Running with the second life of "once"',
      async () => {
        const pod = JSON.parse(await kn('get', 'pod', 'tools', '-o', 'json')) as {
          status: { phase?: string; containerStatuses?: Array<{ name: string; ready: boolean; restartCount: number }> };
        };
        const statuses = pod.status.containerStatuses ?? [];
        return pod.status.phase === 'Running' &&
          statuses.length === 4 &&
          statuses.every((s) => s.ready) &&
          statuses.find((s) => s.name === 'once')!.restartCount >= 1
          ? pod
          : undefined;
      },
      90_000,
    );

  beforeAll(async () => {
    const prepared = await engine.prepare();
    busybox = prepared.busybox;
    port = await freePort();
    flags = [
      ...prepared.flags,
      ...nodeFlags(await cluster.nodeKubeconfig(node), node, port),
      // The API server's client certificate, trusted.
      '--client-ca-file',
      cluster.ca.certFile,
      '--housekeeping-interval',
      '2s',
    ];
    await startAgent();
    await ready();
    // Declared in the status patch that follows the Node's creation.
    const declared = await until('the Node to declare ExtendWebSocketsToKubelet', async () => {
      const n = JSON.parse(await k('get', 'node', node, '-o', 'json')) as { status: { declaredFeatures?: string[] } };
      return n.status.declaredFeatures;
    });
    expect(declared).toEqual(['ExtendWebSocketsToKubelet']);
    await k('create', 'namespace', ns);
    await apply(`${ns}-tools`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'tools', namespace: ns },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        volumes: [{ name: 'data', emptyDir: {} }],
        containers: [
          {
            name: 'app',
            image: busybox,
            imagePullPolicy: 'IfNotPresent',
            command: ['sh', '-c', 'i=0; while true; do i=$((i+1)); echo "line $i"; sleep 0.2; done'],
          },
          {
            // Its first life prints and fails; its second runs on: what --previous reads.
            name: 'once',
            image: busybox,
            imagePullPolicy: 'IfNotPresent',
            command: [
              'sh',
              '-c',
              'if [ -f /data/lived ]; then echo second-life; exec sleep 3600; fi; touch /data/lived; echo first-life; exit 1',
            ],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
          {
            name: 'web',
            image: busybox,
            imagePullPolicy: 'IfNotPresent',
            command: [
              'sh',
              '-c',
              'mkdir -p /www && echo hello-from-web > /www/index.html && head -c 300000 /dev/urandom | base64 > /www/big && exec httpd -f -p 8080 -h /www',
            ],
          },
          {
            name: 'echo',
            image: busybox,
            imagePullPolicy: 'IfNotPresent',
            stdin: true,
            command: ['sh', '-c', 'while read l; do echo "got $l"; done'],
          },
        ],
      },
    });
    await podReady();
  }, 180_000);

  afterAll(async () => {
    await agent?.stop();
    await k('delete', 'namespace', ns, '--ignore-not-found', '--wait=false').catch(() => undefined);
    await k('delete', 'node', node, '--ignore-not-found').catch(() => undefined);
    await engine.cleanUp(node);
  });

  it('kubectl logs: --tail, -c, --previous, and -f follows', async () => {
    const tail = (await kn('logs', 'tools', '-c', 'app', '--tail', '2')).trim().split('\n');
    expect(tail).toHaveLength(2);
    expect(tail.every((l) => /^line \d+$/.test(l))).toBe(true);
    expect(Number(tail[1]!.split(' ')[1])).toBe(Number(tail[0]!.split(' ')[1]) + 1);
    expect((await kn('logs', 'tools', '-c', 'once', '--previous')).trim()).toBe('first-life');
    expect((await kn('logs', 'tools', '-c', 'once')).trim()).toBe('second-life');
    const follow = start('kubectl', ['-n', ns, 'logs', '-f', 'tools', '-c', 'app', '--tail', '1'], kubectlEnv());
    try {
      await until('three lines followed', async () => (follow.out.stdout.trim().split('\n').length >= 3 ? true : undefined), 15_000);
    } finally {
      await follow.stop();
    }
    const followed = follow.out.stdout
      .trim()
      .split('\n')
      .map((l) => Number(l.split(' ')[1]));
    expect(followed[1]).toBe(followed[0]! + 1);
    expect(followed[2]).toBe(followed[0]! + 2);
  }, 60_000);

  it('kubectl top: metrics-server reads the agent’s figures for the node and the pod', async () => {
    const nodeRow = await until(
      'kubectl top node',
      async () => {
        const r = await run('kubectl', ['top', 'node', node, '--no-headers'], { env: kubectlEnv() });
        return r.code === 0 && r.stdout.includes(node) ? r.stdout.trim() : undefined;
      },
      90_000,
    );
    // NAME CPU(cores) CPU% MEMORY(bytes) MEMORY%
    const [, cpu, , memory] = nodeRow.split(/\s+/);
    expect(cpu).toMatch(/^\d+m$/);
    expect(memory).toMatch(/^\d+Mi$/);
    // The same figure as the agent's own /metrics/resource, read through the API server's node proxy.
    const resource = await k('get', '--raw', `/api/v1/nodes/${node}/proxy/metrics/resource`);
    const workingSet = Number(/^node_memory_working_set_bytes (\d+(?:\.\d+)?(?:e\+\d+)?)/m.exec(resource)?.[1]);
    expect(workingSet).toBeGreaterThan(0);
    // Within a tenth: a sample later than metrics-server's.
    expect(Math.abs(Number(memory!.slice(0, -2)) * 1024 * 1024 - workingSet)).toBeLessThan(workingSet / 10);
    const podRows = await until(
      'kubectl top pod --containers',
      async () => {
        const r = await run('kubectl', ['-n', ns, 'top', 'pod', 'tools', '--containers', '--no-headers'], { env: kubectlEnv() });
        return r.code === 0 && r.stdout.includes('tools') ? r.stdout.trim().split('\n') : undefined;
      },
      90_000,
    );
    expect(podRows.map((r) => r.trim().split(/\s+/)[1]).sort()).toEqual(['app', 'echo', 'once', 'web']);
    for (const row of podRows)
      expect(row.trim().split(/\s+/).slice(2)).toEqual([expect.stringMatching(/^\d+m$/), expect.stringMatching(/^\d+Mi$/)]);
  }, 200_000);

  it('refuses who may not: 401 without credentials, 403 for a token without nodes/proxy, and RBAC’s own refusal of pods/exec', async () => {
    const agentUrl = `https://${machineAddress()}:${port}`;
    const none = await callAgent(`${agentUrl}/pods`);
    expect(none.status).toBe(401);
    // A service account's token: the agent asks the cluster who it is, then whether it may.
    await kn('create', 'serviceaccount', 'probe');
    const probeToken = (await kn('create', 'token', 'probe')).trim();
    const probe = await callAgent(`${agentUrl}/pods`, probeToken);
    expect(probe.status).toBe(403);
    expect(JSON.parse(probe.body).error).toBe(
      `Forbidden (user=system:serviceaccount:${ns}:probe, verb=get, resource=nodes, subresource(s)=[pods proxy])`,
    );
    expect((await callAgent(`${agentUrl}/containerLogs/${ns}/tools/app?tailLines=1`, probeToken)).status).toBe(403);
    expect((await callAgent(`${agentUrl}/pods`, 'not-a-token-the-cluster-knows')).status).toBe(401);
    // One given nodes/proxy may.
    await kn('create', 'serviceaccount', 'reader');
    await k('create', 'clusterrole', `${ns}-node-proxy`, '--verb=get', '--resource=nodes/proxy');
    await k('create', 'clusterrolebinding', `${ns}-reader`, `--clusterrole=${ns}-node-proxy`, `--serviceaccount=${ns}:reader`);
    const readerToken = (await kn('create', 'token', 'reader')).trim();
    const logs = await callAgent(`${agentUrl}/containerLogs/${ns}/tools/app?tailLines=1`, readerToken);
    expect(logs.status).toBe(200);
    expect(logs.body).toMatch(/^line \d+\n$/);

    // A person with pods and pods/log but not pods/exec: the API server refuses the exec itself.
    const jane = await cluster.userKubeconfig(`jane-${short}`);
    await kn('create', 'role', 'viewer', '--verb=get,list', '--resource=pods,pods/log');
    await kn('create', 'rolebinding', 'jane-viewer', '--role=viewer', `--user=jane-${short}`);
    const asJane = (...args: string[]) => run('kubectl', ['--kubeconfig', jane, '-n', ns, ...args]);
    expect((await asJane('logs', 'tools', '-c', 'app', '--tail', '1')).code).toBe(0);
    const exec = await asJane('exec', 'tools', '-c', 'app', '--', 'true');
    expect(exec.code).not.toBe(0);
    expect(exec.stderr).toContain(`cannot create resource "pods/exec"`);
  }, 60_000);

  describe.each([
    ['passed through as WebSocket (ExtendWebSocketsToKubelet declared)', 'proxied_to_kubelet', true],
    ['translated to SPDY/3.1 by the API server (not declared)', 'translated_at_apiserver', false],
  ] as const)('streams %s', (_how, proxyType, declared) => {
    beforeAll(async () => {
      if (declared) return;
      await agent?.stop();
      await startAgent(['--feature-gates', 'ExtendWebSocketsToKubelet=false']);
      await until('the Node to declare nothing', async () => {
        const n = JSON.parse(await k('get', 'node', node, '-o', 'json')) as { status: { declaredFeatures?: string[] } };
        return n.status.declaredFeatures === undefined ? true : undefined;
      });
      await ready();
      // The restarted agent takes its containers up again (its first sync pass) before they can be exec'd into.
      await podReady();
      await until('an exec to work again', async () =>
        (await run('kubectl', ['-n', ns, 'exec', 'tools', '-c', 'app', '--', 'true'], { env: kubectlEnv() })).code === 0 ? true : undefined,
      );
      // Restarted with no checkpoint (a root dir of its own): the pods come from the API's list,
      // and are taken up as they run, none removed or made again.
      expect(
        agent!.lines.filter((l) => /^Container(Removed|Created|Stopped)$|^Sandbox(Removed|Created)$/.test(String(l['event']))),
      ).toEqual([]);
    }, 60_000);

    it('kubectl exec: output, stdin, exit codes', async () => {
      const before = await routed('exec', proxyType);
      expect((await kn('exec', 'tools', '-c', 'app', '--', 'echo', 'hello')).trim()).toBe('hello');
      const stdin = await run('kubectl', ['-n', ns, 'exec', '-i', 'tools', '-c', 'app', '--', 'sh', '-c', 'tr a-z A-Z; echo err >&2'], {
        input: 'through stdin\n',
        env: kubectlEnv(),
      });
      expect(stdin).toMatchObject({ code: 0, stdout: 'THROUGH STDIN\n' });
      expect(stdin.stderr).toContain('err');
      const failed = await run('kubectl', ['-n', ns, 'exec', 'tools', '-c', 'app', '--', 'sh', '-c', 'exit 3'], { env: kubectlEnv() });
      expect(failed.code).toBe(3);
      const missing = await run('kubectl', ['-n', ns, 'exec', 'tools', '-c', 'app', '--', '/no/such/command'], { env: kubectlEnv() });
      expect(missing.code).not.toBe(0);
      expect((await routed('exec', proxyType)) - before).toBeGreaterThanOrEqual(4);
    }, 60_000);

    it('kubectl exec -it through a pseudo-terminal: the size, a resize, the exit code', async () => {
      const r = await run('python3', [TTY_SCRIPT, 'kubectl', '-n', ns, 'exec', '-it', 'tools', '-c', 'app', '--', 'sh'], {
        env: kubectlEnv(),
        ms: 60_000,
      });
      // What the terminal showed, and what went wrong if it did not (the script's own error).
      const shown = `${r.stdout}\n--- stderr ---\n${r.stderr}`;
      expect(shown).toContain('30 100\r\n');
      expect(shown).toContain('50 132\r\n');
      expect(r.stdout.trim().split('\n').at(-1)).toBe('EXIT 7');
    }, 70_000);

    it('kubectl attach: what the container prints, and what is typed to it', async () => {
      const before = await routed('attach', proxyType);
      const attach = start('kubectl', ['-n', ns, 'attach', '-i', 'tools', '-c', 'echo'], kubectlEnv());
      try {
        // kubectl says nothing when it is attached: type until the container answers.
        await until(
          'the attached container to answer',
          async () => {
            attach.stdin.write(`ping-${declared}\n`);
            return attach.out.stdout.includes(`got ping-${declared}`) ? true : undefined;
          },
          20_000,
        );
      } finally {
        await attach.stop();
      }
      expect((await routed('attach', proxyType)) - before).toBe(1);
    }, 40_000);

    it('kubectl cp both ways', async () => {
      const local = join(dir, `cp-${short}-${declared}.txt`);
      const content = `copied ${'x'.repeat(100_000)} ${declared}\n`;
      await writeFile(local, content);
      await kn('cp', local, `tools:/in.txt`, '-c', 'app');
      expect(await kn('exec', 'tools', '-c', 'app', '--', 'wc', '-c', '/in.txt')).toBe(`${Buffer.byteLength(content)} /in.txt\n`);
      const back = join(dir, `cp-${short}-${declared}-back.txt`);
      await kn('cp', `tools:/in.txt`, back, '-c', 'app');
      expect(await readFile(back, 'utf8')).toBe(content);
    }, 60_000);

    it('kubectl port-forward: an HTTP request through it, and two connections at once', async () => {
      const before = await routed('portforward', proxyType);
      const forward = start('kubectl', ['-n', ns, 'port-forward', 'pod/tools', ':8080'], kubectlEnv());
      try {
        const local = await until(
          'kubectl to listen',
          async () => /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(forward.out.stdout)?.[1],
          20_000,
        );
        const index = await fetch(`http://127.0.0.1:${local}/index.html`);
        expect(await index.text()).toBe('hello-from-web\n');
        const [a, b] = await Promise.all([
          fetch(`http://127.0.0.1:${local}/big`).then((r) => r.text()),
          fetch(`http://127.0.0.1:${local}/big`).then((r) => r.text()),
        ]);
        expect(a.length).toBeGreaterThan(400_000);
        expect(b).toBe(a);
      } finally {
        await forward.stop();
      }
      expect((await routed('portforward', proxyType)) - before).toBe(1);
    }, 60_000);
  });
});
