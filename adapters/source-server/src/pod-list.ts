import { createHash } from 'node:crypto';
import {
  canonicalJson,
  derivePodStatus,
  podUid,
  rfc3339,
  type ContainerManifest,
  type PodListing,
  type PodStatus,
  type PodView,
  type V1PodList as CoreV1PodList,
} from '@kubelet-ts/core';
import { toV1Pod, type V1Pod } from '@kubelet-ts/manifest';

export { podPhase, rfc3339 } from '@kubelet-ts/core';

/** `/pods`: the shared v1 `PodList` (`@kubelet-ts/core`), each pod with its status. */
export interface V1PodList extends CoreV1PodList {
  kind: 'PodList';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  items: V1PodWithStatus[];
}

/** A pod as `/pods` shows it: `toV1Pod`'s, with its node, namespace, uid and the status the agent keeps. */
export interface V1PodWithStatus extends V1Pod {
  readonly status: PodStatus;
}

/** The node a list is rendered for (a `PodListing` without its pods). */
export type PodListOptions = Omit<PodListing, 'pods'>;

/** Our source names → the kubelet's `kubernetes.io/config.source` values (file, http, api, …). */
const CONFIG_SOURCES: Readonly<Record<string, string>> = { file: 'file', http: 'http', etcd: 'etcd', server: 'http' };

export const PodListAnnotations = {
  configSource: 'kubernetes.io/config.source',
  configHash: 'kubernetes.io/config.hash',
  /** The full name of the source the manifest came from (`config.source` only says its kind). */
  source: 'kubelet-ts.io/source',
  /** JSON: container name → `{ until, delaySeconds }` for each container waiting out its crash back-off. */
  backOff: 'kubelet-ts.io/back-off',
} as const;

/**
 * Renders desired pods and their containers' state as the kubelet's `/pods` does: `metadata` and
 * `spec` are `toV1Pod`'s (plus `spec.nodeName`, the kubelet's annotations and ours), `status` is
 * derived from the views by the kubelet's rules (`getPhase` and the pod conditions in
 * kubelet_pods.go / status_manager). Pure: the same input gives the same output. The mapping is
 * written out in docs/HTTP-API.md, under `GET /pods`.
 *
 * It is rendered here, where `/pods` is served, rather than by the runner: the spec is `toV1Pod`'s,
 * a conversion of the manifest package, and the runner depends on core alone. The agent gives the
 * views and manifests (`AgentView.podListing`); this turns them into the kubelet's wire form.
 */
export function renderPodList(pods: PodListing['pods'], options: PodListOptions): V1PodList {
  return {
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: {},
    items: pods.map(({ view, manifest, status }) => renderPod(view, manifest, options, status)),
  };
}

/** Each manifest's last rendered pod, and as JSON, and what it was rendered from (the node and the view, as JSON). */
const renderedOf = new WeakMap<ContainerManifest, RenderedPod & { readonly from: string }>();

/** A pod as `renderPodList` renders it, and as JSON. */
export interface RenderedPod {
  readonly pod: V1PodWithStatus;
  readonly json: string;
}

/**
 * `renderPodList`'s pods, each beside its JSON, made faster for a list read often and changed
 * little: a pod whose manifest object and view are what they were at the last read is not
 * rendered again (it is kept beside its manifest, keyed by its view's JSON).
 */
export function renderedPods(pods: PodListing['pods'], options: PodListOptions): RenderedPod[] {
  const node = `${options.nodeName}\n${options.runtime}\n${options.hostIP ?? ''}\n`;
  return pods.map(({ view, manifest, status, statusVersion, viewJson }) => {
    // A status of the agent's model is known by its version; one derived here, by the view.
    const from = `${node}${statusVersion ?? ''}\n${viewJson ?? JSON.stringify(view)}`;
    const known = renderedOf.get(manifest);
    if (known !== undefined && known.from === from) return known;
    const pod = renderPod(view, manifest, options, status);
    const rendered = { from, pod, json: JSON.stringify(pod) };
    renderedOf.set(manifest, rendered);
    return rendered;
  });
}

/** `JSON.stringify(renderPodList(pods, options))`, the same text, from `renderedPods`: what `GET /pods` sends. */
export function renderPodListJson(pods: PodListing['pods'], options: PodListOptions): string {
  const items = renderedPods(pods, options).map((p) => p.json);
  return `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[${items.join(',')}]}`;
}

/** What a pod's rendering takes from its manifest alone: its v1 form, config hash and uid. */
interface ManifestParts {
  readonly source: string;
  readonly nodeName: string;
  readonly v1: ReturnType<typeof toV1Pod>;
  readonly configHash: string;
  readonly uid: string;
}

/**
 * Each manifest's parts, by the manifest object: a source hands the same object on until the
 * manifest changes, so a list of 1,000 pods is converted and hashed once, not at every read.
 */
const partsOf = new WeakMap<ContainerManifest, ManifestParts>();

function manifestParts(manifest: ContainerManifest, source: string, nodeName: string): ManifestParts {
  const known = partsOf.get(manifest);
  if (known !== undefined && known.source === source && known.nodeName === nodeName) return known;
  const parts = {
    source,
    nodeName,
    v1: toV1Pod(manifest),
    configHash: hex(`${source}\n${canonicalJson(manifest)}`),
    // The kubelet derives a static pod's uid from a hash of where it came from; a given uuid wins.
    uid: podUid(manifest, { node: nodeName, source }),
  };
  partsOf.set(manifest, parts);
  return parts;
}

function renderPod(view: PodView, manifest: ContainerManifest, options: PodListOptions, given?: PodStatus): V1PodWithStatus {
  const { v1, configHash, uid } = manifestParts(manifest, view.source, options.nodeName);
  const backOffs = Object.fromEntries(
    view.containers.flatMap((c) =>
      c.backOff === undefined ? [] : [[c.name, { until: rfc3339(c.backOff.until), delaySeconds: c.backOff.delayMs / 1000 }]],
    ),
  );
  const metadata = {
    ...v1.metadata,
    namespace: manifest.namespace ?? 'default',
    uid,
    annotations: {
      ...(manifest.annotations ?? {}),
      [PodListAnnotations.configSource]: configSourceOf(view.source),
      [PodListAnnotations.configHash]: configHash,
      [PodListAnnotations.source]: view.source,
      ...(Object.keys(backOffs).length === 0 ? {} : { [PodListAnnotations.backOff]: JSON.stringify(backOffs) }),
    },
  };
  const status = given ?? derivePodStatus(view, manifest, options);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: { ...v1.spec, nodeName: options.nodeName },
    status,
  };
}

function configSourceOf(source: string): string {
  const kind = /^[a-z]+/.exec(source)?.[0] ?? source;
  return CONFIG_SOURCES[kind] ?? source;
}

function hex(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}
