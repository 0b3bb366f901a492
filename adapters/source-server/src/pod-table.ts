import type { PodListing, V1ObjectMeta } from '@kubelet-ts/core';
import { HttpProblem } from './http-kit.js';
import { renderedPods } from './pod-list.js';
import { POD_COLUMNS, podCells } from './pod-printing.js';

export { TABLE_MEDIA_TYPE } from './pod-printing.js';

/**
 * Whether an `Accept` header asks for a `Table` rather than the list: the first media range this
 * server can answer decides (a Table of `meta.k8s.io/v1`, or `application/json`, `application/*` or
 * any type); q-values are not weighed. kubectl sends the Table first, then `application/json` for a
 * server that has none.
 */
export function asksForTable(accept: string | undefined): boolean {
  for (const range of (accept ?? '').split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const parameter = new Map(
      parameters.map((p): [string, string] => {
        const [name = '', value = ''] = p.split('=').map((part) => part.trim());
        return [name, value];
      }),
    );
    const as = parameter.get('as');
    if (as === undefined && ['application/json', 'application/*', '*/*'].includes(type)) return false;
    if (type === 'application/json' && as === 'table' && parameter.get('g') === 'meta.k8s.io' && parameter.get('v') === 'v1') return true;
  }
  return false;
}

/** What each row carries beside its cells (`?includeObject=`): nothing, the pod's metadata (the default, as the API server's), or the pod. */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function includeObjectOf(url: URL): IncludeObject {
  const asked = url.searchParams.get('includeObject');
  if (asked === null || asked === '') return 'Metadata';
  if (asked === 'None' || asked === 'Metadata' || asked === 'Object') return asked;
  throw new HttpProblem(400, `the query parameter "includeObject" must be None, Metadata or Object, got ${JSON.stringify(asked)}`);
}

/**
 * `GET /pods` as a `meta.k8s.io/v1` `Table` (what `kubectl get pods` asks an API server for): the
 * columns of `POD_COLUMNS`, a row a pod with its cells as of `now` and what `include` asks for. A
 * client lays the rows out, and reads 44 % of the `PodList`'s bytes (1,000 pods) and none of the status.
 */
export function renderPodTableJson(listing: PodListing, now: number, include: IncludeObject): string {
  // In the API server's order, namespace then name: kubectl prints a Table's rows as they come.
  const rows = renderedPods(listing.pods, listing)
    .map((rendered) => ({ rendered, key: keyOf(rendered.pod.metadata) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ rendered: { pod, json } }) => {
      const cells = JSON.stringify(podCells(pod, now));
      if (include === 'None') return `{"cells":${cells}}`;
      if (include === 'Object') return `{"cells":${cells},"object":${json}}`;
      return `{"cells":${cells},"object":${metadataOf(pod)}}`;
    });
  return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":${JSON.stringify(POD_COLUMNS)},"rows":[${rows.join(',')}]}`;
}

/** A pod's namespace and name, as one string that sorts as the API server lists (NUL cannot be in either). */
function keyOf(metadata: V1ObjectMeta): string {
  return `${metadata.namespace ?? 'default'}\u0000${metadata.name ?? ''}`;
}

/** Each rendered pod's metadata as a `PartialObjectMetadata`, in JSON: kept while the pod is (`renderedPods` keeps it while its view is the same). */
const metadataJson = new WeakMap<object, string>();

function metadataOf(pod: { readonly metadata: unknown }): string {
  let json = metadataJson.get(pod);
  if (json === undefined) {
    json = `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":${JSON.stringify(pod.metadata)}}`;
    metadataJson.set(pod, json);
  }
  return json;
}
