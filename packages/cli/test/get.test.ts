import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { parse } from 'yaml';
import { KubeletError, Labels, type ManifestSource } from '@kubelet-ts/core';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler, agentApiListener } from '@kubelet-ts/source-server';
import { getMain } from '../src/get.js';
import { runClient, until, type RunOptions } from './run-client.js';

const TOKEN = 'cli-get-token-0123456789abcdef012345';
const MINUTE = 60_000;

/** A source that delivers nothing and rejects one manifest, twice (the agent folds the two). */
const rejecting: ManifestSource = {
  name: 'file',
  start: async (sink) => {
    sink.update([]);
    for (let i = 0; i < 2; i++) sink.error(new KubeletError('InvalidManifest', 'web.yaml: containers[0].image: required'));
  },
  close: async () => undefined,
};

const WEB = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', labels: { app: 'web', tier: 'front' } },
  spec: { containers: [{ name: 'main', image: 'busybox:1.36' }] },
};
const API = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'api', labels: { app: 'api' } },
  spec: {
    containers: [
      {
        name: 'api',
        image: 'nginx:1.27',
        ports: [{ containerPort: 8080, hostPort: 18081 }],
        // Not probed within the test: the container runs, not ready.
        readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, initialDelaySeconds: 300 },
      },
    ],
  },
};
const DB = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'db', namespace: 'shop', labels: { app: 'db' } },
  spec: { containers: [{ name: 'pg', image: 'postgres:16' }] },
};

describe('kubelet-ts get, against a running agent on the in-memory runtime (issue 25)', () => {
  let runtime: MemoryRuntime;
  let server: ServerManifestSource;
  let kubelet: Kubelet;
  let url: string;
  /** 20 minutes after the last thing the agent did: every age reads 20m. */
  let now: number;
  const post = (manifest: object) =>
    fetch(`${url}/container`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(manifest),
    });
  const get = (args: readonly string[], options: RunOptions = {}) =>
    runClient(getMain, [...args, '--server', url], { env: { KUBELET_TS_AUTH_TOKEN: TOKEN }, now, ...options });

  beforeAll(async () => {
    runtime = new MemoryRuntime();
    server = new ServerManifestSource({ port: 0, authToken: TOKEN });
    kubelet = createKubelet({ runtime, sources: [rejecting, server], hostname: 'get-node' });
    // The agent's clock is the tests' `now` once it is known: the ages of its Table count to it.
    server.mount(agentApiHandler(kubelet, { now: () => (now === undefined ? Date.now() : now) }));
    await kubelet.start();
    url = server.url;
    for (const pod of [WEB, API, DB]) expect((await post(pod)).status).toBe(201);
    await kubelet.sync();
    runtime.exit(runtime.snapshot().find((c) => c.state === 'running' && c.labels[Labels.manifestId] === 'web')!.id, 1);
    await kubelet.sync();
    const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
    const everything = JSON.stringify([await (await fetch(`${url}/pods`, auth)).json(), await (await fetch(`${url}/events`, auth)).json()]);
    now = Math.max(...[...everything.matchAll(/"(\d{4}-\d\d-\d\dT[\d:]+Z)"/g)].map((m) => Date.parse(m[1]!))) + 20 * MINUTE;
  });

  afterAll(async () => {
    await kubelet.close();
  });

  describe('get pods', () => {
    it("prints the namespace's pods as kubectl does: READY, STATUS, RESTARTS with how long ago, AGE", async () => {
      expect(await get(['pods'])).toEqual({
        code: 0,
        stdout: [
          'NAME   READY   STATUS    RESTARTS      AGE',
          'api    0/1     Running   0             20m',
          'web    1/1     Running   1 (20m ago)   20m',
          '',
        ].join('\n'),
        stderr: '',
      });
      // Without the header its width is not counted: columns as wide as their cells (at least 6, as kubectl's).
      expect((await get(['po', '-n', 'shop', '--no-headers'])).stdout).toBe('db    1/1   Running   0     20m\n');
    });

    it('-A puts NAMESPACE first, -o wide adds IP and NODE', async () => {
      expect((await get(['pod', '-A', '-o', 'wide'])).stdout).toBe(
        [
          // The in-memory runtime's pods have addresses of its own (10.88.x.y), from their sandboxes.
          'NAMESPACE   NAME   READY   STATUS    RESTARTS      AGE   IP          NODE',
          'default     api    0/1     Running   0             20m   10.88.0.3   get-node',
          'default     web    1/1     Running   1 (20m ago)   20m   10.88.0.1   get-node',
          'shop        db     1/1     Running   0             20m   10.88.0.5   get-node',
          '',
        ].join('\n'),
      );
    });

    it("asks the agent for kubectl's Table, its ages by the agent's clock; an agent that answers only the list gets the same rows", async () => {
      // The client's clock 20 minutes past the agent's: the ages are still the agent's.
      expect((await get(['pods', '--no-headers'], { now: now + 20 * MINUTE })).stdout).toMatch(/^api .* 20m\nweb .* 20m\n$/);
      // An agent older than its Table: the list, laid out by the client to its own clock.
      const listener = agentApiListener(kubelet, { authToken: TOKEN });
      const older = createServer((req, res) => {
        delete req.headers.accept;
        listener(req, res);
      });
      await new Promise<void>((resolve) => older.listen(0, '127.0.0.1', resolve));
      try {
        const olderUrl = `http://127.0.0.1:${(older.address() as AddressInfo).port}`;
        const ran = await runClient(getMain, ['pod', '-A', '-o', 'wide', '--server', olderUrl], {
          env: { KUBELET_TS_AUTH_TOKEN: TOKEN },
          now,
        });
        expect(ran).toEqual(await get(['pod', '-A', '-o', 'wide']));
        expect(ran.stdout.split('\n')).toHaveLength(5);
      } finally {
        await new Promise((resolve) => older.close(resolve));
      }
    });

    it("is read by kubectl, a client that is not ours: kubectl get pods lays the agent's Table out as kubelet-ts get pods does", async () => {
      // kubectl asks a Table only of an API server, after discovery: a stand-in answers discovery
      // (pods in core v1) and hands each pod list to the agent's /pods with kubectl's own Accept.
      const discovery: Record<string, unknown> = {
        '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] },
        '/apis': { kind: 'APIGroupList', apiVersion: 'v1', groups: [] },
        '/api/v1': {
          kind: 'APIResourceList',
          groupVersion: 'v1',
          resources: [{ name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list'], shortNames: ['po'] }],
        },
      };
      const accepts: string[] = [];
      const standIn = createServer((req, res) => {
        const path = new URL(req.url ?? '/', 'http://stand-in').pathname;
        if (path in discovery) {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(discovery[path]));
          return;
        }
        if (!/^\/api\/v1\/(namespaces\/[^/]+\/)?pods$/.test(path)) {
          res.writeHead(404).end();
          return;
        }
        accepts.push(req.headers.accept ?? '');
        void fetch(`${url}/pods`, { headers: { accept: req.headers.accept ?? '', authorization: `Bearer ${TOKEN}` } }).then(
          async (answer) => {
            res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? '' }).end(await answer.text());
          },
        );
      });
      await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
      const cache = await mkdtemp(join(tmpdir(), 'kubelet-ts-kubectl-cache-'));
      try {
        const server = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
        const kubectl = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) =>
          execFile(
            'kubectl',
            ['get', 'pods', '-A', '-o', 'wide', '--server', server, '--cache-dir', cache],
            { timeout: 30_000, env: { ...process.env, KUBECONFIG: '/dev/null' } },
            (error, stdout, stderr) => {
              if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT')
                reject(
                  new Error(
                    'kubectl is not on PATH: install it (apt-get install kubernetes-client) to read the Table with a client that is not ours',
                  ),
                );
              resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
            },
          ),
        );
        expect(accepts[0]).toContain('application/json;as=Table;v=v1;g=meta.k8s.io');
        expect(kubectl).toEqual({ code: 0, stdout: (await get(['pods', '-A', '-o', 'wide'])).stdout, stderr: '' });
      } finally {
        await new Promise((resolve) => standIn.close(resolve));
        await rm(cache, { recursive: true, force: true });
      }
    });

    it('selects by label (=, !=, existence, in) and by name', async () => {
      const names = async (args: string[]) => (await get(['pods', '-o', 'name', ...args])).stdout;
      expect(await names(['-l', 'app=web'])).toBe('pod/web\n');
      expect(await names(['-l', 'app!=web'])).toBe('pod/api\n');
      expect(await names(['-l', 'tier'])).toBe('pod/web\n');
      expect(await names(['-l', '!tier', '-A'])).toBe('pod/api\npod/db\n');
      expect(await names(['-l', 'app in (web, db)', '-A'])).toBe('pod/web\npod/db\n');
      expect(await names(['api'])).toBe('pod/api\n');
      expect(await get(['pods', 'nope'])).toEqual({
        code: 1,
        stdout: '',
        stderr: 'kubelet-ts get: pod "nope" not found in namespace default\n',
      });
      expect(await get(['pods', '-l', 'app=nothing'])).toEqual({
        code: 0,
        stdout: '',
        stderr: 'No resources found in default namespace.\n',
      });
    });

    it('-o json is a PodList of the selected pods (one pod asked by name: the pod), -o yaml the same as YAML', async () => {
      const list = JSON.parse((await get(['pods', '-A', '-o', 'json'])).stdout) as {
        kind: string;
        items: Array<{ metadata: { name: string } }>;
      };
      expect(list.kind).toBe('PodList');
      expect(list.items.map((p) => p.metadata.name)).toEqual(['api', 'web', 'db']);
      const web = JSON.parse((await get(['pods', 'web', '-o', 'json'])).stdout) as {
        kind: string;
        status: { containerStatuses: unknown[] };
      };
      expect(web).toMatchObject({ kind: 'Pod', metadata: { name: 'web', labels: { app: 'web' } }, status: { phase: 'Running' } });
      const yaml = parse((await get(['pods', '-l', 'app=api', '-o', 'yaml'])).stdout) as { items: Array<{ metadata: { name: string } }> };
      expect(yaml.items.map((p) => p.metadata.name)).toEqual(['api']);
    });

    it('colours STATUS on a terminal, not through a pipe nor with NO_COLOR', async () => {
      expect((await get(['pods', 'web'], { tty: true })).stdout).toContain('\x1b[32mRunning\x1b[0m');
      expect((await get(['pods', 'web'], { tty: true, env: { KUBELET_TS_AUTH_TOKEN: TOKEN, NO_COLOR: '1' } })).stdout).not.toContain(
        '\x1b[',
      );
      expect((await get(['pods', 'web'])).stdout).not.toContain('\x1b[');
    });

    it('-w prints the table, then a row per change: a pod added, then one removed (Terminating), until stopped', async () => {
      let stop: () => void = () => undefined;
      const stopped = new Promise<void>((resolve) => (stop = resolve));
      let seen = '';
      const watching = get(['pods', '-w'], { stopped, onOutput: (out) => (seen = out), now: undefined });
      await until(() => seen.includes('web '), 'the first table');
      expect(seen).toMatch(/^NAME {3}READY {3}STATUS {4}RESTARTS +AGE\napi .*\nweb .*\n$/);
      expect((await post({ ...WEB, metadata: { name: 'late' } })).status).toBe(201);
      await until(() => /\nlate +1\/1 +Running +0 +\d+s\n/.test(seen), 'the new pod running');
      expect((await fetch(`${url}/container/late`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      await until(() => /\nlate +\d\/1 +Terminating +0 +\d+s\n/.test(seen), 'the removed pod, as kubectl shows it going');
      stop();
      const ran = await watching;
      expect(ran.code).toBe(0);
      expect(ran.stderr).toBe('');
      // Rows line up under the first table.
      for (const line of ran.stdout.trimEnd().split('\n')) expect(line.indexOf('   ', 4)).toBe(4);
    });

    it('-w --output-watch-events says ADDED, MODIFIED and DELETED', async () => {
      let stop: () => void = () => undefined;
      const stopped = new Promise<void>((resolve) => (stop = resolve));
      let seen = '';
      const watching = get(['pods', '-w', '--output-watch-events', '-l', 'app=late'], { stopped, onOutput: (out) => (seen = out) });
      expect((await post({ ...WEB, metadata: { name: 'later', labels: { app: 'late' } } })).status).toBe(201);
      await until(() => /^EVENT +NAME +READY +STATUS +RESTARTS +AGE\nADDED +later /.test(seen), 'the ADDED row');
      expect((await fetch(`${url}/container/later`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      await until(() => /\nDELETED +later +\d\/1 +Terminating /.test(seen), 'the DELETED row');
      stop();
      expect((await watching).code).toBe(0);
    });
  });

  describe('get containers', () => {
    const rows = (text: string) => text.trimEnd().split('\n');
    it("lists the running containers as crictl ps does, the exited ones with -a (the restarted container's first run)", async () => {
      const running = await get(['containers', '-A']);
      const [head, ...lines] = rows(running.stdout);
      expect(head).toBe(
        'CONTAINER           IMAGE               CREATED             STATE               NAME                ATTEMPT             POD ID              POD',
      );
      expect(lines.map((l) => l.split(/ {3,}/).slice(1))).toEqual(
        expect.arrayContaining([
          ['nginx:1.27', '20 minutes ago', 'Running', 'api', '0', expect.stringMatching(/^[0-9a-f]{13}$/), 'api'],
          ['postgres:16', '20 minutes ago', 'Running', 'pg', '0', expect.stringMatching(/^[0-9a-f]{13}$/), 'db'],
          ['busybox:1.36', '20 minutes ago', 'Running', 'main', '1', expect.stringMatching(/^[0-9a-f]{13}$/), 'web'],
        ]),
      );
      expect(lines).toHaveLength(3);
      for (const line of lines) expect(line).toMatch(/^[0-9a-f]{12} /);
      const all = rows((await get(['ps', '-a'])).stdout).slice(1);
      expect(all.map((l) => l.split(/ {3,}/).slice(3, 6))).toEqual(
        expect.arrayContaining([
          ['Running', 'main', '1'],
          ['Exited', 'main', '0'],
          ['Running', 'api', '0'],
        ]),
      );
      expect(all).toHaveLength(3);
    });
  });

  describe('get events', () => {
    it("prints kubectl's columns, the node's events in default, a folded one's count and span", async () => {
      const { code, stdout } = await get(['events']);
      expect(code).toBe(0);
      const [head, ...lines] = stdout.trimEnd().split('\n');
      expect(head).toMatch(/^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$/);
      expect(lines[0]).toMatch(
        /^20m \(x2 over 20m\) +Warning +ManifestRejected +node\/get-node +web\.yaml: containers\[0\]\.image: required$/,
      );
      expect(lines.some((l) => /^20m +Normal +\S+ +pod\/web +.*exited with code 1$/.test(l))).toBe(true);
      expect(lines.some((l) => l.includes('pod/api'))).toBe(true);
      expect(lines.some((l) => l.includes('pod/db'))).toBe(false);
    });

    it('-n, -A, --for pod/NAME, -o json and yaml; Warning in yellow on a terminal', async () => {
      const shop = (await get(['ev', '-n', 'shop'])).stdout.trimEnd().split('\n').slice(1);
      expect(shop.length).toBeGreaterThan(0);
      for (const line of shop) expect(line).toMatch(/ pod\/db /);
      expect((await get(['events', '-A'])).stdout).toMatch(/^NAMESPACE +LAST SEEN +TYPE/);
      const forWeb = (await get(['events', '--for', 'pod/web', '--no-headers'])).stdout.trimEnd().split('\n');
      for (const line of forWeb) expect(line).toMatch(/ pod\/web /);
      const list = JSON.parse((await get(['events', '-o', 'json'])).stdout) as { kind: string; items: Array<{ count: number }> };
      expect(list.kind).toBe('EventList');
      expect(list.items[0]).toMatchObject({ type: 'Warning', count: 2, involvedObject: { kind: 'Node', name: 'get-node' } });
      expect((parse((await get(['events', '-o', 'yaml', '--for', 'node/get-node'])).stdout) as { items: unknown[] }).items).toHaveLength(1);
      expect((await get(['events', '--for', 'node/get-node'], { tty: true })).stdout).toContain('\x1b[33mWarning\x1b[0m');
    });

    it('-w prints a row for each new event', async () => {
      let stop: () => void = () => undefined;
      const stopped = new Promise<void>((resolve) => (stop = resolve));
      let seen = '';
      const watching = get(['events', '-w', '--for', 'pod/evented'], { stopped, onOutput: (out) => (seen = out) });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await post({ ...WEB, metadata: { name: 'evented' } })).status).toBe(201);
      await until(() => /pod\/evented +started /.test(seen), "the new pod's events");
      stop();
      expect((await watching).code).toBe(0);
      expect(seen).toMatch(/^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE\n/);
    });
  });

  describe('get sources', () => {
    it('lists each source and how it is, then the manifests it rejected', async () => {
      const ran = await get(['sources']);
      // The server holds the pods posted so far.
      expect({ ...ran, stdout: ran.stdout.replace(/\nserver {3}yes {4}\d /, '\nserver   yes    N ') }).toEqual({
        code: 0,
        stdout: [
          'NAME     SEEN   MANIFESTS   STATUS',
          'file     yes    0           web.yaml: containers[0].image: required',
          'server   yes    N           ok',
          '',
          'Rejected manifests:',
          'SOURCE   COUNT   LAST SEEN   MESSAGE',
          'file     2       20m         web.yaml: containers[0].image: required',
          '',
        ].join('\n'),
        stderr: '',
      });
    });
  });

  describe('refuses what it cannot do, in one line and exit 1', () => {
    it.each([
      [['deployments'], 'unknown resource "deployments": use pods (po), containers (ps), events (ev) or sources'],
      [['pods', '-o', 'xml'], 'unknown output format "xml" for pods: use json, yaml, name, wide'],
      [['containers', '-o', 'json'], 'containers are printed as a table only: -o json is not a format for them'],
      [['pods', '-l', 'app=we b'], 'invalid label selector "app=we b": "we b" is not a label value'],
      [['sources', '-w'], '-w is for pods and events, not sources'],
      [['pods', '--for', 'pod/web'], '--for is for events, not pods'],
      [['events', '--for', 'web'], '--for "web": give pod/NAME or node/NAME'],
    ])('get %j', async (args, message) => {
      const ran = await get(args);
      expect(ran.code).toBe(1);
      expect(ran.stdout).toBe('');
      expect(ran.stderr).toMatch(new RegExp(`^kubelet-ts get: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      expect(ran.stderr.trimEnd().split('\n')).toHaveLength(1);
    });
  });
});
