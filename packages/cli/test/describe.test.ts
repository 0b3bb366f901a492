import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Labels } from '@kubelet-ts/core';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler } from '@kubelet-ts/source-server';
import { describeMain, describePod } from '../src/describe.js';
import { KUBECTL_DESCRIBE, tabwrite } from '../src/table.js';
import { runClient } from './run-client.js';

// kubectl describe writes times in the local zone: this one, for the expected text.
process.env['TZ'] = 'UTC';

const MINUTE = 60_000;
/** Go's RFC1123Z, as describe writes times. */
const TIME = /\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000/g;

const WEB = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', labels: { app: 'web', tier: 'front' } },
  spec: {
    containers: [
      {
        name: 'main',
        image: 'busybox:1.36',
        command: ['httpd'],
        args: ['-f', '-p', '8080'],
        ports: [{ containerPort: 8080 }],
        env: [{ name: 'MODE', value: 'demo' }],
        // Not probed within the test.
        livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, initialDelaySeconds: 300, periodSeconds: 5 },
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      },
    ],
    volumes: [{ name: 'data', emptyDir: {} }],
  },
};

describe('kubelet-ts describe pod, against a running agent on the in-memory runtime (issue 25)', () => {
  let runtime: MemoryRuntime;
  let server: ServerManifestSource;
  let kubelet: Kubelet;
  let now: number;
  const describePods = (args: readonly string[]) => runClient(describeMain, [...args, '--server', server.url], { now });
  const post = (manifest: object) =>
    fetch(`${server.url}/container`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(manifest) });

  beforeAll(async () => {
    runtime = new MemoryRuntime();
    server = new ServerManifestSource({ port: 0 });
    kubelet = createKubelet({ runtime, sources: [server], hostname: 'describe-node' });
    server.mount(agentApiHandler(kubelet));
    await kubelet.start();
    expect((await post(WEB)).status).toBe(201);
    const api = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'api', namespace: 'shop' },
      spec: {
        containers: [
          {
            name: 'api',
            image: 'nginx:1.27',
            ports: [{ containerPort: 8080, hostPort: 18082 }],
            readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, initialDelaySeconds: 300 },
          },
        ],
      },
    };
    expect((await post(api)).status).toBe(201);
    await kubelet.sync();
    runtime.exit(runtime.snapshot().find((c) => c.state === 'running' && c.labels[Labels.manifestId] === 'web')!.id, 1);
    await kubelet.sync();
    const events = JSON.stringify(await (await fetch(`${server.url}/events`)).json());
    now = Math.max(...[...events.matchAll(/"(\d{4}-\d\d-\d\dT[\d:]+Z)"/g)].map((m) => Date.parse(m[1]!))) + 20 * MINUTE;
  });

  afterAll(async () => {
    await kubelet.close();
  });

  it("lays a pod out as kubectl describe does: containers' state and last state, probes, environment, mounts, conditions, volumes, source, events", async () => {
    const { code, stdout, stderr } = await describePods(['pod', 'web']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const [head, events] = stdout.replace(TIME, '<time>').split('Events:\n');
    const lines = head!.split('\n');
    expect(lines.slice(0, 7)).toEqual([
      'Name:         web',
      'Namespace:    default',
      'Node:         describe-node/192.0.2.2',
      'Start Time:   <time>',
      'Labels:       app=web',
      '              tier=front',
      'Annotations:  kubelet-ts.io/source: server',
    ]);
    expect(lines[7]).toMatch(/^ {14}kubernetes\.io\/config\.hash: [0-9a-f]{32}$/);
    expect(lines[15]).toMatch(/^ {4}Container ID: {2}memory:\/\/[0-9a-f]{12}$/);
    expect([...lines.slice(8, 15), ...lines.slice(16)].join('\n')).toBe(
      [
        '              kubernetes.io/config.source: http',
        'Status:       Running',
        // The in-memory runtime's address of the pod's sandbox.
        'IP:           10.88.0.1',
        'IPs:',
        '  IP:  10.88.0.1',
        'Containers:',
        '  main:',
        '    Image:         busybox:1.36',
        // The in-memory runtime names an image by the digest of its name, as an engine by its content's.
        `    Image ID:      sha256:${createHash('sha256').update('busybox:1.36').digest('hex')}`,
        '    Port:          8080/TCP',
        '    Host Port:     0/TCP',
        '    Command:',
        '      httpd',
        '    Args:',
        '      -f',
        '      -p',
        '      8080',
        '    State:          Running',
        '      Started:      <time>',
        '    Last State:     Terminated',
        '      Reason:       Error',
        '      Exit Code:    1',
        '      Started:      <time>',
        '      Finished:     <time>',
        '    Ready:          True',
        '    Restart Count:  1',
        '    Liveness:       exec [cat /tmp/healthy] delay=300s timeout=1s period=5s #success=1 #failure=3',
        '    Environment:',
        '      MODE:  demo',
        '    Mounts:',
        '      /data from data (rw)',
        'Conditions:',
        '  Type                        Status',
        '  PodReadyToStartContainers   True ',
        '  Initialized                 True ',
        '  Ready                       True ',
        '  ContainersReady             True ',
        '  PodScheduled                True ',
        'Volumes:',
        '  data:',
        "    Type:       EmptyDir (a temporary directory that shares a pod's lifetime)",
        '    Medium:     ',
        '    SizeLimit:  <unset>',
        'QoS Class:      BestEffort',
        'Source:         server (kubernetes.io/config.source=http)',
        '',
      ].join('\n'),
    );
    const [title, rule, ...rows] = events!.trimEnd().split('\n');
    expect(title).toMatch(/^ {2}Type {4}Reason +Age {3}From {5}Message$/);
    expect(rule).toMatch(/^ {2}---- {4}------ +---- {2}---- {5}-------$/);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toMatch(/^ {2}Normal +\S+ +20m +kubelet +\S/);
    expect(rows.some((r) => r.endsWith('exited with code 1'))).toBe(true);
  });

  it('finds the events of a pod of another namespace, and says an http-get probe as kubectl does', async () => {
    const { code, stdout } = await describePods(['pod', 'api', '-n', 'shop']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/\n {4}Readiness: +http-get http:\/\/:8080\/healthz delay=300s timeout=1s period=10s #success=1 #failure=3\n/);
    expect(stdout).toMatch(/\n {4}Ready: +False\n/);
    expect(stdout).toMatch(/\nEvents:\n {2}Type +Reason/);
    expect(stdout).toMatch(/\n {2}Normal +\S+ +20m +kubelet +started api--/);
  });

  it('lists the init containers first, under Init Containers:, with their state, as kubectl does', async () => {
    const batch = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'batch' },
      spec: { initContainers: [{ name: 'setup', image: 'busybox:1.36' }], containers: [{ name: 'job', image: 'busybox:1.36' }] },
    };
    expect((await post(batch)).status).toBe(201);
    await kubelet.sync();
    const { code, stdout } = await describePods(['pod', 'batch']);
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    const init = lines.indexOf('Init Containers:');
    expect(init).toBeGreaterThan(0);
    expect(lines[init + 1]).toBe('  setup:');
    expect(lines.slice(init).find((l) => l.startsWith('    State:'))).toMatch(/^ {4}State: +Running$/);
    expect(lines.indexOf('Containers:')).toBeGreaterThan(init);
    expect(lines[lines.indexOf('Containers:') + 1]).toBe('  job:');
  });

  it('says a pod on its way out is Terminating, for how long, and its grace, as kubectl does; a finished one keeps its phase', () => {
    const marked = (phase: string) =>
      describePod(
        {
          metadata: { name: 'web', deletionTimestamp: new Date(now - 7_000).toISOString(), deletionGracePeriodSeconds: 2 },
          spec: { containers: [{ name: 'c', image: 'i' }] },
          status: { phase, qosClass: 'Burstable' },
        },
        [],
        now,
      ).map((cells) => cells.map((c) => (typeof c === 'string' ? c : c.text)).join(' '));
    const running = marked('Running');
    expect(running).toContainEqual('Status: Terminating (lasts 7s)');
    expect(running).toContainEqual('Termination Grace Period: 2s');
    expect(running).toContainEqual('QoS Class: Burstable');
    const done = marked('Succeeded');
    expect(done).toContainEqual('Status: Succeeded');
    expect(done.some((l) => l.startsWith('Termination Grace Period'))).toBe(false);
  });

  it('says <none> where a pod has no events, labels or mounts', () => {
    const text = tabwrite(
      describePod({ metadata: { name: 'bare' }, spec: { containers: [{ name: 'c', image: 'i' }] } }, [], now),
      KUBECTL_DESCRIBE,
    );
    expect(text).toContain('Labels:       <none>\nAnnotations:  <none>\n');
    expect(text).toContain('    Environment:  <none>\n    Mounts:       <none>\n');
    expect(text).toMatch(/\nSource: +<unknown>\nEvents: +<none>\n$/);
  });

  it("shows a variable read from a Secret, a ConfigMap, a pod field or a resource as kubectl does, never a Secret's value", () => {
    const text = tabwrite(
      describePod(
        {
          metadata: { name: 'db', namespace: 'shop' },
          spec: {
            containers: [
              {
                name: 'pg',
                image: 'postgres:16',
                resources: { limits: { memory: '1Gi' } },
                env: [
                  { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 's1', key: 'k' } } },
                  { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'mode', optional: true } } },
                  { name: 'POD', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
                  { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory' } } },
                  { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
                  { name: 'PLAIN', value: 'x' },
                ],
              },
            ],
          },
        },
        [],
        now,
      ),
      KUBECTL_DESCRIBE,
    );
    const environment = text.slice(text.indexOf('    Environment:'), text.indexOf('    Mounts:'));
    expect(environment.split('\n')).toEqual([
      '    Environment:',
      "      PASSWORD:  <set to the key 'k' in secret 's1'>               Optional: false",
      "      MODE:      <set to the key 'mode' of config map 'settings'>  Optional: true",
      '      POD:       db (v1:metadata.name)',
      '      MEM:       1Gi (limits.memory)',
      '      CPU:       node allocatable (limits.cpu)',
      '      PLAIN:     x',
      '',
    ]);
  });

  it('refuses an unknown pod and anything but pods, in one line and exit 1', async () => {
    expect(await describePods(['pod', 'nope'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'kubelet-ts describe: pod "default/nope" is not on this agent (see kubelet-ts get pods)\n',
    });
    expect(await describePods(['deployment', 'web'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'kubelet-ts describe: cannot describe "deployment": only pods (kubelet-ts describe pod NAME)\n',
    });
  });
});
