import { describe, expect, it } from '@jest/globals';
import { validateManifest, type ContainerManifest, type ContainerView, type PodView } from '@kubelet-ts/core';
import { renderPodList, renderPodListJson, type PodListOptions } from '../src/pod-list.js';

const T = Date.UTC(2026, 11, 5, 10, 0, 0);
const OPTIONS: PodListOptions = { nodeName: 'node-1', runtime: 'docker', hostIP: '192.0.2.10' };

function checked(id: string, extra: Record<string, unknown> = {}): ContainerManifest {
  const result = validateManifest({ version: 'v1beta1', id, containers: [{ name: 'app', image: 'app:1' }], ...extra });
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.manifest;
}

const running = (restartCount = 0): ContainerView => ({
  name: 'app',
  image: 'app:1',
  state: 'running',
  id: `app-${restartCount}`,
  startedAt: T + restartCount * 1000,
  restartCount,
  started: true,
  ready: true,
});

type Listing = { view: PodView; manifest: ContainerManifest }[];
const expected = (pods: Listing, options: PodListOptions = OPTIONS) => JSON.stringify(renderPodList(pods, options));

describe('renderPodListJson (what GET /pods sends)', () => {
  const web = checked('web', { labels: { app: 'web' } });
  const db = checked('db');
  const listing = (webView: PodView = { id: 'web', source: 'file', containers: [running()] }): Listing => [
    { view: webView, manifest: web },
    { view: { id: 'db', source: 'http', podIP: '10.88.0.4', containers: [running()] }, manifest: db },
  ];

  it('is the text of renderPodList, and stays so when the same pods are read again', () => {
    expect(renderPodListJson(listing(), OPTIONS)).toBe(expected(listing()));
    expect(renderPodListJson(listing(), OPTIONS)).toBe(expected(listing()));
    expect(renderPodListJson([], OPTIONS)).toBe(expected([]));
    expect(JSON.parse(renderPodListJson(listing(), OPTIONS))).toMatchObject({
      kind: 'PodList',
      items: [{ metadata: { name: 'web' } }, {}],
    });
  });

  it('renders a pod again when its view changed, though its manifest object is the one it had', () => {
    renderPodListJson(listing(), OPTIONS);
    const restarted = listing({ id: 'web', source: 'file', containers: [running(3)] });
    const text = renderPodListJson(restarted, OPTIONS);
    expect(text).toBe(expected(restarted));
    expect(JSON.parse(text).items[0].status.containerStatuses[0].restartCount).toBe(3);
    // A source that hands the pod over from elsewhere gives another uid and config source.
    const moved = listing({ id: 'web', source: 'etcd', containers: [running(3)] });
    expect(renderPodListJson(moved, OPTIONS)).toBe(expected(moved));
  });

  it('renders again for another node, runtime or host address', () => {
    renderPodListJson(listing(), OPTIONS);
    for (const options of <PodListOptions[]>[
      { ...OPTIONS, nodeName: 'node-2' },
      { ...OPTIONS, runtime: 'containerd' },
      { nodeName: 'node-1', runtime: 'docker' },
    ])
      expect(renderPodListJson(listing(), options)).toBe(expected(listing(), options));
  });

  it('renders a changed manifest (a new object) from the manifest', () => {
    renderPodListJson(listing(), OPTIONS);
    const relabelled = checked('web', { labels: { app: 'web', tier: 'front' } });
    const pods: Listing = [{ view: { id: 'web', source: 'file', containers: [running()] }, manifest: relabelled }];
    const text = renderPodListJson(pods, OPTIONS);
    expect(text).toBe(expected(pods));
    expect(JSON.parse(text).items[0].metadata.labels).toEqual({ app: 'web', tier: 'front' });
  });
});
