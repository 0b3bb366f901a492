import { createHash } from 'node:crypto';
import { canonicalJson, podNameOf, type ContainerManifest, type Logger, type PodKey } from '@kubelet-ts/core';
import { toV1Pod } from '@kubelet-ts/manifest';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { apiStatus } from './api-errors.js';
import { MIRROR_ANNOTATION, type ApiPod } from './api-pod-source.js';

/** What the mirror pods are made from: the agent's pods of sources other than the API (its static pods). */
export interface StaticPods {
  desired(): { readonly pods: readonly { readonly manifest: ContainerManifest; readonly source: string }[] };
  /** Whether each source has delivered: until then a static pod not given yet may still come, and no mirror is deleted. */
  status(): { readonly sources: readonly { readonly seen: boolean }[] };
}

/** What `MirrorPods` needs: the API, the Node, the agent's static pods and the API source's name. */
export interface MirrorPodsOptions {
  readonly api: CoreV1Api;
  readonly nodeName: string;
  readonly nodeUid: string;
  readonly agent: StaticPods;
  /** The API source's name: its pods are the API's own, with no mirror. */
  readonly apiSource: string;
  /** The mirror pods of this node the API holds now (the API source sees them in its watch). */
  readonly mirrors: () => readonly ApiPod[];
  /** Told the static pod (its id) whose mirror was just made: its status is to be written to it. */
  readonly made?: (podId: string) => void;
  readonly logger: Logger;
}

/** A static pod as the kubelet names its mirror: `<name>-<node>`, in the pod's namespace. */
interface Wanted {
  readonly podId: string;
  readonly namespace: string;
  readonly name: string;
  readonly hash: string;
  readonly manifest: ContainerManifest;
  readonly source: string;
}

/**
 * The kubelet's mirror pods (`pkg/kubelet/pod/mirror_client.go`): each static pod (from a file, a
 * URL, etcd or the agent's server) has a copy in the API, `<name>-<node>` in its namespace, bound to
 * the node, owned by the Node, annotated `kubernetes.io/config.mirror` with the hash of its
 * manifest, carrying its status (see `PodStatusWriter`). A mirror whose hash is not its static pod's
 * (the manifest changed) is deleted and made again; one whose static pod is gone is deleted; one
 * deleted by someone is made again. A mirror the API refuses (NodeRestriction refuses a mirror pod
 * that reads a Secret or a ConfigMap) is said once per manifest, not tried again.
 */
export class MirrorPods {
  private readonly refused = new Set<string>();
  private readonly inFlight = new Set<string>();
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly options: MirrorPodsOptions) {}

  /** The key of the mirror pod of the static pod `podId`, when the API has it. */
  mirrorOf(podId: string): PodKey | undefined {
    const wanted = this.wanted().find((w) => w.podId === podId);
    if (wanted === undefined) return undefined;
    const mirror = this.options
      .mirrors()
      .find(
        (m) =>
          m.metadata.namespace === wanted.namespace &&
          m.metadata.name === wanted.name &&
          hashOf(m) === wanted.hash &&
          m.metadata.deletionTimestamp === undefined,
      );
    return mirror === undefined ? undefined : { namespace: wanted.namespace, name: wanted.name, uid: mirror.metadata.uid };
  }

  /** Brings the API's mirror pods in line with the static pods (one run at a time; a call during one runs again after it). */
  reconcile(): Promise<void> {
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        void this.reconcile();
      }
    });
    return this.running;
  }

  private async run(): Promise<void> {
    if (!this.options.agent.status().sources.every((s) => s.seen)) return;
    const wanted = this.wanted();
    const mirrors = this.options.mirrors();
    const byName = new Map(mirrors.map((m) => [`${m.metadata.namespace}/${m.metadata.name}`, m]));
    const keep = new Set<string>();
    for (const w of wanted) {
      const key = `${w.namespace}/${w.name}`;
      keep.add(key);
      const mirror = byName.get(key);
      if (mirror !== undefined && hashOf(mirror) === w.hash && mirror.metadata.deletionTimestamp === undefined) continue;
      // Deleted by someone (it waits for the node with a grace period): let it go now, and make it again when it is gone.
      if (mirror?.metadata.deletionTimestamp !== undefined) await this.delete(mirror, 'it was deleted; it is made again');
      else if (mirror !== undefined) await this.delete(mirror, `its static pod changed (hash ${w.hash})`);
      else await this.create(w);
    }
    for (const [key, mirror] of byName) if (!keep.has(key)) await this.delete(mirror, 'its static pod is gone');
  }

  private wanted(): Wanted[] {
    const { agent, apiSource, nodeName } = this.options;
    return agent
      .desired()
      .pods.filter((p) => p.source !== apiSource)
      .map(({ manifest, source }) => ({
        podId: manifest.id,
        namespace: manifest.namespace ?? 'default',
        name: `${podNameOf(manifest.id, manifest.namespace)}-${nodeName}`,
        hash: configHash(manifest, source),
        manifest,
        source,
      }));
  }

  private async create(w: Wanted): Promise<void> {
    const { api, nodeName, nodeUid, logger } = this.options;
    const attempt = `${w.namespace}/${w.name}/${w.hash}`;
    if (this.refused.has(attempt) || this.inFlight.has(attempt)) return;
    this.inFlight.add(attempt);
    const v1 = toV1Pod(w.manifest);
    const body = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: w.name,
        namespace: w.namespace,
        ...(v1.metadata.labels === undefined ? {} : { labels: v1.metadata.labels }),
        annotations: {
          ...v1.metadata.annotations,
          [MIRROR_ANNOTATION]: w.hash,
          'kubernetes.io/config.hash': w.hash,
          'kubernetes.io/config.source': w.source === 'http' ? 'http' : 'file',
        },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUid, controller: true }],
      },
      spec: { ...v1.spec, nodeName },
      // The v1 JSON the agent writes (`toV1Pod`), handed to the client as its model, which serializes it field by field.
    } as unknown as V1Pod;
    try {
      await api.createNamespacedPod({ namespace: w.namespace, body });
      logger.info({ pod: `${w.namespace}/${w.name}`, podId: w.podId }, 'api: mirror pod made');
      this.options.made?.(w.podId);
    } catch (error) {
      const status = apiStatus(error);
      if (status === 409) return;
      if (status !== undefined && status >= 400 && status < 500) this.refused.add(attempt);
      logger.warn({ err: error, pod: `${w.namespace}/${w.name}` }, `api: mirror pod not made: ${(error as Error).message}`);
    } finally {
      this.inFlight.delete(attempt);
    }
  }

  private async delete(mirror: ApiPod, why: string): Promise<void> {
    const { api, logger } = this.options;
    logger.info({ pod: `${mirror.metadata.namespace}/${mirror.metadata.name}`, hash: hashOf(mirror) }, `api: mirror pod deleted: ${why}`);
    await api
      .deleteNamespacedPod({
        name: mirror.metadata.name,
        namespace: mirror.metadata.namespace,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid: mirror.metadata.uid } },
      })
      .catch((error: unknown) => {
        if (apiStatus(error) === 404 || apiStatus(error) === 409) return;
        logger.warn(
          { err: error, pod: `${mirror.metadata.namespace}/${mirror.metadata.name}` },
          `api: mirror pod not deleted: ${(error as Error).message}`,
        );
      });
  }
}

/**
 * The hash of a static pod's manifest, once per manifest object: a source hands the same object on
 * until the manifest changes, and the writer and the events ask a pod's mirror at every change.
 */
const hashes = new WeakMap<ContainerManifest, { readonly source: string; readonly hash: string }>();
function configHash(manifest: ContainerManifest, source: string): string {
  const known = hashes.get(manifest);
  if (known?.source === source) return known.hash;
  const hash = createHash('sha256')
    .update(`${source}\n${canonicalJson(manifest)}`)
    .digest('hex')
    .slice(0, 32);
  hashes.set(manifest, { source, hash });
  return hash;
}

function hashOf(mirror: ApiPod): string | undefined {
  return mirror.metadata.annotations?.[MIRROR_ANNOTATION];
}
