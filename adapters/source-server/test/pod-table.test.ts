import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PodListing } from '@kubelet-ts/core';
import { POD_COLUMNS, TABLE_MEDIA_TYPE, agentApiListener, asksForTable, podCells, renderPodList, type PrintedPod } from '../src/index.js';
import { checkedManifest } from '@kubelet-ts/conformance';
import { FakeView } from './fake-view.js';
import { send } from './http-request.js';

/** What kubectl sends when it lists pods (`kubectl get pods`). */
const KUBECTL_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

describe('asksForTable (which answer an Accept header gets)', () => {
  it.each([
    [KUBECTL_ACCEPT, true],
    [TABLE_MEDIA_TYPE, true],
    ['application/json; as=Table; g=meta.k8s.io; v=v1', true],
    [undefined, false],
    ['', false],
    ['application/json', false],
    ['*/*', false],
    // The first range this server can answer decides: the list, asked for before the Table.
    [`application/json, ${TABLE_MEDIA_TYPE}`, false],
    // Tables of another group or version are not served: the list follows.
    ['application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json', false],
    ['application/json;as=Table;v=v1;g=example.com', false],
    ['application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io', true],
  ])('%s → a Table: %s', (accept, table) => {
    expect(asksForTable(accept)).toBe(table);
  });
});

/** Two pods: `web` running in default, `jobs` of `batch` waiting out a crash back-off after 4 restarts. */
class TwoPods extends FakeView {
  override async podListing(): Promise<PodListing> {
    const web = checkedManifest({ version: 'v1beta1', id: 'web', containers: [{ name: 'nginx', image: 'nginx' }] });
    const jobs = checkedManifest({
      version: 'v1beta1',
      id: 'jobs',
      namespace: 'batch',
      labels: { app: 'jobs' },
      containers: [{ name: 'worker', image: 'busybox' }],
    });
    // Times from now, as an agent's views are: the server counts ages to its own now.
    const NOW = Date.now();
    const started = NOW - 3 * 60 * 60_000;
    return {
      nodeName: 'node-1',
      runtime: 'fake',
      hostIP: '192.0.2.7',
      pods: [
        {
          manifest: web,
          view: {
            id: web.id,
            source: 'file',
            podIP: '10.88.0.2',
            containers: [
              { name: 'nginx', image: 'nginx', state: 'running', id: 'a', startedAt: started, restartCount: 0, started: true, ready: true },
            ],
          },
        },
        {
          manifest: jobs,
          view: {
            id: jobs.id,
            source: 'server',
            containers: [
              {
                name: 'worker',
                image: 'busybox',
                state: 'exited',
                id: 'b',
                exitCode: 1,
                startedAt: NOW - 6 * 60_000,
                finishedAt: NOW - 5 * 60_000,
                restartCount: 4,
                started: false,
                ready: false,
                backOff: { until: NOW + 60_000, delayMs: 80_000 },
                waitingReason: 'CrashLoopBackOff',
              },
            ],
          },
        },
      ],
    };
  }
}

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server?.closeAllConnections();
  server = undefined;
});

async function serve(view: FakeView): Promise<string> {
  server = createServer(agentApiListener(view));
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('GET /pods as a Table (what kubectl get asks for)', () => {
  it("answers kubectl's Accept with a meta.k8s.io/v1 Table: kubectl's pod columns, a row a pod with its metadata", async () => {
    const view = new TwoPods();
    const url = await serve(view);
    const listing = await view.podListing();
    const pods = renderPodList(listing.pods, listing).items;
    const answer = await send(url, '/pods', { headers: { accept: KUBECTL_ACCEPT } });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe(`${TABLE_MEDIA_TYPE}; charset=utf-8`);
    const table = answer.json as {
      kind: string;
      apiVersion: string;
      columnDefinitions: unknown[];
      rows: { cells: string[]; object: unknown }[];
    };
    expect(table).toMatchObject({ kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: {} });
    expect(table.columnDefinitions).toEqual(POD_COLUMNS);
    expect(POD_COLUMNS.map((c) => `${c.name}:${c.priority}`)).toEqual([
      'Name:0',
      'Ready:0',
      'Status:0',
      'Restarts:0',
      'Age:0',
      'IP:1',
      'Node:1',
    ]);
    // In the API server's order, namespace then name: batch/jobs before default/web, though the agent lists web first.
    expect(table.rows.map((r) => r.cells[0])).toEqual(['jobs', 'web']);
    const [jobs, web] = table.rows;
    const inOrder = [pods[1], pods[0]];
    expect(web?.cells).toEqual(['web', '1/1', 'Running', '0', '3h', '10.88.0.2', 'node-1']);
    expect(jobs?.cells.slice(0, 4)).toEqual(['jobs', '0/1', 'CrashLoopBackOff', expect.stringMatching(/^4 \(5m\d*s? ago\)$/)]);
    expect(jobs?.cells.slice(5)).toEqual(['<none>', 'node-1']);
    // Each row is the list's pod, as the columns read it, with the pod's whole metadata.
    table.rows.forEach((row, i) => {
      expect(row.object).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: inOrder[i]?.metadata });
      expect(row.cells.filter((_, c) => c !== 3 && c !== 4)).toEqual(
        podCells(inOrder[i] as unknown as PrintedPod, Date.now()).filter((_, c) => c !== 3 && c !== 4),
      );
    });
    expect(jobs?.object).toMatchObject({ metadata: { name: 'jobs', namespace: 'batch', labels: { app: 'jobs' } } });
  });

  it('carries the whole pod with includeObject=Object, nothing with None, and refuses another value by name', async () => {
    const view = new TwoPods();
    const url = await serve(view);
    const listing = await view.podListing();
    const pods = renderPodList(listing.pods, listing).items;
    const whole = (await send(url, '/pods?includeObject=Object', { headers: { accept: TABLE_MEDIA_TYPE } })).json as {
      rows: { object: unknown }[];
    };
    expect(whole.rows.map((r) => r.object)).toEqual([pods[1], pods[0]]);
    const bare = (await send(url, '/pods?includeObject=None', { headers: { accept: TABLE_MEDIA_TYPE } })).json as { rows: object[] };
    expect(bare.rows.map((r) => Object.keys(r))).toEqual([['cells'], ['cells']]);
    const wrong = await send(url, '/pods?includeObject=All', { headers: { accept: TABLE_MEDIA_TYPE } });
    expect(wrong.status).toBe(400);
    expect(wrong.json).toEqual({ error: 'the query parameter "includeObject" must be None, Metadata or Object, got "All"' });
  });

  it('answers the PodList to every other Accept, a Table of another version included', async () => {
    const view = new TwoPods();
    const url = await serve(view);
    for (const accept of [undefined, 'application/json', '*/*', 'application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json']) {
      const answer = await send(url, '/pods', accept === undefined ? {} : { headers: { accept } });
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.json).toMatchObject({ kind: 'PodList', items: [{ metadata: { name: 'web' } }, { metadata: { name: 'jobs' } }] });
    }
  });
});
