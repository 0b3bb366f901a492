import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { describeProbe, rfc1123z } from '../src/describe.js';
import { eventInterval, eventObject } from '../src/get-events.js';
import { humanDuration, podSummary } from '@kubelet-ts/source-server/pod-printing';
import { wordyDuration } from '../src/human-duration.js';
import { parseSelector, selects } from '../src/label-selector.js';
import { KUBECTL_DESCRIBE, colourWanted, table, tabwrite } from '../src/table.js';
import type { V1Pod } from '../src/v1.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe("kubectl's ages (apimachinery duration.HumanDuration, its own test cases)", () => {
  it.each([
    [S, '1s'],
    [70 * S, '70s'],
    [190 * S, '3m10s'],
    [70 * M, '70m'],
    [47 * H, '47h'],
    [49 * H, '2d1h'],
    [(8 * 24 + 2) * H, '8d'],
    [367 * D, '367d'],
    [(365 * 2 * 24 + 25) * H, '2y1d'],
    [(365 * 8 * 24 + 2) * H, '8y'],
    [-2 * S, '<invalid>'],
    [-2 * S + 1, '0s'],
    [0, '0s'],
    [S - 1, '0s'],
    [2 * M - 1, '119s'],
    [2 * M, '2m'],
    [2 * M + S, '2m1s'],
    [5 * M + 30 * S, '5m30s'],
    [10 * M - 1, '9m59s'],
    [10 * M, '10m'],
    [10 * M + S, '10m'],
    [3 * H - 1, '179m'],
    [3 * H, '3h'],
    [3 * H + M, '3h1m'],
    [8 * H - 1, '7h59m'],
    [8 * H, '8h'],
    [8 * H + 59 * M, '8h'],
    [2 * D - 1, '47h'],
    [2 * D, '2d'],
    [2 * D + H, '2d1h'],
    [8 * D - 1, '7d23h'],
    [8 * D, '8d'],
    [8 * D + 23 * H, '8d'],
    [2 * 365 * D - 1, '729d'],
    [2 * 365 * D, '2y'],
    [2 * 365 * D + 24 * H - 1, '2y'],
    [2 * 365 * D + 24 * H, '2y1d'],
    [8 * 365 * D - 1, '7y364d'],
    [8 * 365 * D, '8y'],
    [9 * 365 * D, '9y'],
  ])('%d ms is %s', (ms, want) => {
    expect(humanDuration(ms)).toBe(want);
  });

  it("crictl's CREATED words (go-units HumanDuration)", () => {
    expect([0.5 * S, S, 45 * S, 90 * S, 5 * M, 75 * M, 3 * H, 3 * D, 21 * D, 90 * D, 3 * 365 * D].map(wordyDuration)).toEqual([
      'Less than a second',
      '1 second',
      '45 seconds',
      'About a minute',
      '5 minutes',
      'About an hour',
      '3 hours',
      '3 days',
      '3 weeks',
      '3 months',
      '3 years',
    ]);
  });
});

describe("Go's tabwriter, as kubectl prints through it", () => {
  it('pads each column but the last to its widest cell plus 3, at least 6 (kubectl get)', () => {
    expect(
      table([
        ['NAME', 'READY', 'STATUS', 'AGE'],
        ['a', '1/1', 'Running', '5m'],
      ]),
    ).toBe('NAME   READY   STATUS    AGE\na      1/1     Running   5m\n');
    expect(table([['IP', 'X']])).toBe('IP    X\n');
  });

  it('aligns blocks of consecutive lines with a cell in a column, as kubectl describe is aligned', () => {
    const text = tabwrite(
      [['Name:', 'web'], ['Namespace:', 'default'], ['Containers:'], ['  main:'], ['    Image:', 'busybox'], ['    Restart Count:', '0']],
      KUBECTL_DESCRIBE,
    );
    expect(text).toBe('Name:       web\nNamespace:  default\nContainers:\n  main:\n    Image:          busybox\n    Restart Count:  0\n');
  });

  it('counts a cell in characters, as Go counts runes: an accent or a character outside the BMP is one', () => {
    expect(
      table([
        ['NAME', 'AGE'],
        ['café', '1s'],
        ['🐳-web', '2s'],
        ['a', '3s'],
      ]),
    ).toBe('NAME    AGE\ncafé    1s\n🐳-web   2s\na       3s\n');
  });

  it('colours a cell, not its padding, and only when asked', () => {
    const rows = [
      ['NAME', 'STATUS', 'AGE'],
      ['a', { text: 'Error', colour: 'red' as const }, '1s'],
    ];
    expect(table(rows)).toBe('NAME   STATUS   AGE\na      Error    1s\n');
    expect(table(rows, { colour: true })).toBe('NAME   STATUS   AGE\na      \x1b[31mError\x1b[0m    1s\n');
  });

  it('colours on a terminal only, and never with NO_COLOR set', () => {
    const tty = Object.assign(new PassThrough(), { isTTY: true });
    expect(colourWanted({ stdout: tty, env: {} })).toBe(true);
    expect(colourWanted({ stdout: tty, env: { NO_COLOR: '1' } })).toBe(false);
    expect(colourWanted({ stdout: new PassThrough(), env: {} })).toBe(false);
  });
});

describe('label selectors, as kubectl -l reads them', () => {
  const labels = { app: 'web', tier: 'front' };
  it.each([
    ['', true],
    ['app=web', true],
    ['app==web,tier=front', true],
    ['app=db', false],
    ['app!=db', true],
    ['release!=1', true],
    ['app', true],
    ['!app', false],
    ['!release', true],
    ['app in (db, web)', true],
    ['tier notin (front),app', false],
    ['example.com/app=web', false],
  ])('%j selects the pod: %s', (selector, want) => {
    expect(selects(parseSelector(selector), labels)).toBe(want);
  });

  it('says what it cannot read', () => {
    expect(() => parseSelector('app=web,')).toThrow('invalid label selector "app=web,": an empty requirement (a comma too many?)');
    expect(() => parseSelector('=web')).toThrow(/cannot read "=web"/);
    expect(() => parseSelector('app=we b')).toThrow(/"we b" is not a label value/);
    expect(() => parseSelector('-app=web')).toThrow(/"-app" is not a label key/);
  });
});

describe("a pod's init containers in its STATUS, by kubectl's printPod", () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  const inits = [{ name: 'setup' }, { name: 'proxy', restartPolicy: 'Always' }, { name: 'migrate' }];
  const pod = (initContainerStatuses: object[], initialized = false): V1Pod => ({
    metadata: { name: 'p' },
    spec: { initContainers: inits, containers: [{ name: 'web' }] },
    status: {
      phase: initialized ? 'Running' : 'Pending',
      conditions: [{ type: 'Initialized', status: initialized ? 'True' : 'False' }],
      initContainerStatuses: initContainerStatuses as never,
      containerStatuses: [
        {
          name: 'web',
          ready: initialized,
          restartCount: 0,
          state: initialized ? { running: {} } : { waiting: { reason: 'PodInitializing' } },
        },
      ] as never,
    },
  });
  const done = { name: 'setup', restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed' } } };
  const sidecar = { name: 'proxy', restartCount: 0, started: true, ready: true, state: { running: {} } };
  const waiting = (name: string, reason = 'PodInitializing') => ({ name, restartCount: 0, state: { waiting: { reason } } });

  it.each([
    [[waiting('setup', 'ContainerCreating'), waiting('proxy'), waiting('migrate')], 'Init:ContainerCreating', '0/2'],
    [[{ ...done, state: { running: {} } }, waiting('proxy'), waiting('migrate')], 'Init:0/3', '0/2'],
    [[done, sidecar, waiting('migrate')], 'Init:2/3', '1/2'],
    [
      [{ ...done, restartCount: 2, state: { terminated: { exitCode: 1, reason: 'Error' } } }, waiting('proxy'), waiting('migrate')],
      'Init:Error',
      '0/2',
    ],
    [
      [{ ...done, restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } } }, waiting('proxy'), waiting('migrate')],
      'Init:CrashLoopBackOff',
      '0/2',
    ],
  ])('%# reads %s', (statuses, status, ready) => {
    expect(podSummary(pod(statuses), now)).toMatchObject({ status, ready });
  });

  it('reads the app containers once initialized, the sidecar counted among the ready', () => {
    expect(podSummary(pod([done, sidecar, { ...done, name: 'migrate' }], true), now)).toEqual({
      ready: '2/2',
      status: 'Running',
      restarts: '0',
    });
  });
});

describe("a pod's READY, STATUS and RESTARTS by kubectl's printPod", () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  const pod = (containerStatuses: object[], extra: Partial<V1Pod> = {}): V1Pod => ({
    metadata: { name: 'p' },
    spec: { containers: containerStatuses.map((_, i) => ({ name: `c${i}` })) },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: containerStatuses as never },
    ...extra,
  });
  const running = { name: 'c', ready: true, restartCount: 0, state: { running: {} } };
  it('a waiting reason, a terminated reason, the first container winning', () => {
    expect(podSummary(pod([running, running]), now)).toEqual({ ready: '2/2', status: 'Running', restarts: '0' });
    const crashing = {
      name: 'c',
      ready: false,
      restartCount: 4,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, finishedAt: '2026-01-01T11:55:00Z' } },
    };
    expect(podSummary(pod([crashing, running]), now)).toEqual({ ready: '1/2', status: 'CrashLoopBackOff', restarts: '4 (5m ago)' });
    expect(podSummary(pod([running, { name: 'c', state: { waiting: { reason: 'ImagePullBackOff' } } }]), now).status).toBe(
      'ImagePullBackOff',
    );
    expect(podSummary(pod([{ name: 'c', state: { terminated: { exitCode: 2 } } }]), now).status).toBe('ExitCode:2');
    expect(podSummary(pod([{ name: 'c', state: { terminated: { exitCode: 0, reason: 'Completed' } } }]), now).status).toBe('Completed');
  });

  it('Completed beside a running container reads Running; a pod on its way out reads Terminating unless it has finished', () => {
    const done = { name: 'c', state: { terminated: { exitCode: 0, reason: 'Completed' } } };
    expect(podSummary(pod([done, running]), now).status).toBe('Running');
    expect(podSummary(pod([running]), now, true).status).toBe('Terminating');
    expect(podSummary(pod([done], { status: { phase: 'Succeeded', containerStatuses: [done as never] } }), now, true).status).toBe(
      'Completed',
    );
  });
});

describe("kubectl describe's probes, times and event ages", () => {
  it('says probes as DescribeProbe does', () => {
    const timing = { initialDelaySeconds: 5, timeoutSeconds: 1, periodSeconds: 5, successThreshold: 1, failureThreshold: 3 };
    expect(describeProbe({ exec: { command: ['cat', '/tmp/healthy'] }, ...timing })).toBe(
      'exec [cat /tmp/healthy] delay=5s timeout=1s period=5s #success=1 #failure=3',
    );
    expect(describeProbe({ httpGet: { path: '/healthz', port: 8080 }, ...timing })).toBe(
      'http-get http://:8080/healthz delay=5s timeout=1s period=5s #success=1 #failure=3',
    );
    expect(describeProbe({ httpGet: { path: '/', port: 'web', host: '::1', scheme: 'HTTPS' }, ...timing })).toMatch(
      /^http-get https:\/\/\[::1\]:web\/ /,
    );
    expect(describeProbe({ tcpSocket: { port: 5432 }, ...timing })).toMatch(/^tcp-socket :5432 delay=5s/);
    expect(describeProbe({ grpc: { port: 2379 }, ...timing })).toBe(
      'grpc <pod>:2379 <default> delay=5s timeout=1s period=5s #success=1 #failure=3',
    );
    expect(describeProbe({ grpc: { port: 9090, service: 'liveness' }, ...timing })).toMatch(/^grpc <pod>:9090 liveness delay=5s/);
  });

  it('writes times as RFC 1123 with a numeric zone, in the local zone', () => {
    expect(rfc1123z('2026-01-01T12:00:00Z')).toMatch(/^Thu, 01 Jan 2026 \d\d:\d\d:00 [+-]\d{4}$/);
    expect(rfc1123z(undefined)).toBe('<unknown>');
  });

  it("an event's age, and a folded one's count and span; its object in kubectl's words", () => {
    const now = Date.parse('2026-01-01T12:10:00Z');
    const event = { metadata: {}, involvedObject: { kind: 'Pod', name: 'db', namespace: 'shop' }, firstTimestamp: '2026-01-01T12:00:00Z' };
    expect(eventInterval({ ...event, lastTimestamp: '2026-01-01T12:00:00Z', count: 1 }, now)).toBe('10m');
    expect(eventInterval({ ...event, lastTimestamp: '2026-01-01T12:08:00Z', count: 4 }, now)).toBe('2m (x4 over 10m)');
    expect(eventObject(event)).toBe('pod/db');
    expect(eventObject({ metadata: {}, involvedObject: { kind: 'Node', name: 'node-1' } })).toBe('node/node-1');
  });
});
