import {
  hostAccessOf,
  referencedObjects,
  serviceEnvironmentRefs,
  type ContainerManifest,
  type FieldError,
  type HostAccess,
  type Logger,
  type ManifestSource,
  type SourceSink,
} from '@kubelet-ts/core';
import { validateV1Pod } from '@kubelet-ts/manifest';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiObjects } from './api-objects.js';
import { ListWatch } from './list-watch.js';
import type { ApiServices } from './api-services.js';
import type { PodFeed } from './pod-feed.js';
import type { PodApiServer } from './service-variables.js';

/** The annotation of a mirror pod (a static pod's copy in the API): never run, it is the node's own record. */
export const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** A v1 Pod as the API server sends it, read as JSON (the fields the source looks at). */
export interface ApiPod {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly resourceVersion?: string;
    readonly deletionTimestamp?: string;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly status?: { readonly phase?: string };
}

/** A pod of this node the agent cannot run as it is written: the fields that are wrong. */
export interface UnrunnablePod {
  readonly pod: ApiPod;
  readonly errors: readonly FieldError[];
}

/** What `ApiPodSource` needs: the cluster, the node's name, when the Node exists, and whom to tell of a pod it cannot run. */
export interface ApiPodSourceOptions extends HostAccess {
  readonly kubeConfig: KubeConfig;
  readonly nodeName: string;
  readonly logger: Logger;
  /** Resolves once the Node exists: the source lists nothing before (the kubelet's `config/apiserver.go`). */
  readonly nodeRegistered: Promise<unknown>;
  /** Told each pod it cannot run, once per version of the pod (the node writes its `Failed` status). */
  readonly unrunnable?: (pod: UnrunnablePod) => void;
  /** Told when the mirror pods of this node in the API changed (see `mirrors`). */
  readonly mirrorsChanged?: () => void;
  /** Where the pods reach the API server (their `KUBERNETES_SERVICE_HOST`/`_PORT`); absent: the `kubernetes` Service's ClusterIP. */
  readonly podApiServer?: PodApiServer;
  /** A watch of every bound pod shared with other nodes of this process (`PodFeed`): then this source holds no watch of its own. */
  readonly podFeed?: PodFeed;
  /** The Services, watched once for every node of this process (see `ApiObjectsOptions.services`). */
  readonly services?: ApiServices;
}

/**
 * The pods the API server binds to this node (`spec.nodeName=<node>`), as the kubelet's API source
 * reads them: listed once the Node exists, then watched from the list's `resourceVersion` (with
 * bookmarks); a watch that ends is resumed from the last version seen, one that is too old (410
 * Gone) is replaced by a new list; a failure is tried again with back-off (1 s doubling to 30 s),
 * the last good set staying in force. Each pod is read as a v1 Pod by the same rules as any source,
 * its placement left to the node's admission; a mirror pod is not run; a pod that cannot be run is
 * left out, and said (`unrunnable`) so that its status says why.
 */
export class ApiPodSource implements ManifestSource {
  readonly name = 'api';
  private readonly pods = new Map<string, ApiPod>();
  /** Per pod uid and resourceVersion: what it was read as, so that an unchanged pod is the same manifest object. */
  private readonly read = new Map<string, { readonly version: string; readonly manifest: ContainerManifest | undefined }>();
  private sink: SourceSink | undefined;
  private closed = false;
  private scheduled = false;
  /** The list and watch of this node's pods, when no shared `PodFeed` gives them. */
  private watching: ListWatch<ApiPod> | undefined;
  private mirrorShape = '';
  private delivered = new Set<string>();
  /** The ConfigMaps and Secrets the pods read, from the API (delivered beside them). */
  private readonly objects: ApiObjects;
  /** Stops hearing from a shared `PodFeed`. */
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: ApiPodSourceOptions) {
    this.objects = new ApiObjects({
      kubeConfig: options.kubeConfig,
      logger: options.logger,
      changed: () => this.schedule(),
      ...(options.podApiServer === undefined ? {} : { podApiServer: options.podApiServer }),
      ...(options.services === undefined ? {} : { services: options.services }),
    });
  }

  /** Whether the agent runs `podId` for the API (its last delivery held it). */
  has(podId: string): boolean {
    return this.delivered.has(podId);
  }

  /** The mirror pods of this node the API holds now (copies of its static pods; never run). */
  mirrors(): ApiPod[] {
    return [...this.pods.values()].filter((p) => p.metadata.annotations?.[MIRROR_ANNOTATION] !== undefined);
  }

  async start(sink: SourceSink): Promise<void> {
    this.sink = sink;
    this.closed = false;
    const feed = this.options.podFeed;
    void this.options.nodeRegistered.then(() => {
      if (this.closed) return;
      const replace = (pods: readonly ApiPod[]) => {
        this.pods.clear();
        // A list's items carry no apiVersion or kind (the list says them once), which a v1 Pod must have:
        // given back, as client-go's typed lists do, or every pod of a restarted agent is refused.
        for (const pod of pods) this.pods.set(pod.metadata.uid, { ...pod, apiVersion: 'v1', kind: 'Pod' });
        this.deliver();
      };
      const apply = (type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: ApiPod) => {
        if (type === 'DELETED') this.pods.delete(pod.metadata.uid);
        else this.pods.set(pod.metadata.uid, pod);
        this.schedule();
      };
      if (feed !== undefined) {
        this.unsubscribe = feed.subscribe(this.options.nodeName, { replace, apply, failed: (error) => this.sink?.error(error) });
        return;
      }
      this.watching = new ListWatch<ApiPod>({
        kubeConfig: this.options.kubeConfig,
        path: '/api/v1/pods',
        fieldSelector: `spec.nodeName=${this.options.nodeName}`,
        listed: replace,
        changed: apply,
        failed: (error, delay) => this.sink?.error(new Error(`api: ${error.message}; trying again in ${delay} ms`)),
      });
      this.watching.start();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    this.watching?.close();
    this.objects.close();
    this.sink = undefined;
  }

  /** Delivers once for the changes of one turn of the event loop (a watch sends many at once). */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.closed) this.deliver();
    });
  }

  private deliver(): void {
    const manifests: ContainerManifest[] = [];
    const seen = new Set<string>();
    for (const [uid, pod] of this.pods) {
      seen.add(uid);
      if (pod.metadata.annotations?.[MIRROR_ANNOTATION] !== undefined) continue;
      const version = pod.metadata.resourceVersion ?? '';
      let known = this.read.get(uid);
      if (known === undefined || known.version !== version) {
        const result = validateV1Pod(pod, { ...hostAccessOf(this.options), placementAtAdmission: true, serviceAccountTokens: true });
        known = { version, manifest: result.ok ? result.manifest : undefined };
        this.read.set(uid, known);
        if (!result.ok) {
          this.options.logger.warn(
            { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, errors: result.errors },
            'api: a pod of this node cannot be run',
          );
          this.options.unrunnable?.({ pod, errors: result.errors });
        }
      }
      if (known.manifest !== undefined) manifests.push(known.manifest);
    }
    for (const uid of [...this.read.keys()]) if (!seen.has(uid)) this.read.delete(uid);
    // What the pods read of the API's objects (their ConfigMaps, Secrets, tokens and service
    // variables): fetched for them, delivered with them (a change or a first read delivers again).
    // Nothing is delivered before the first read: a container made before it would miss the
    // service variables it is made with.
    this.objects.use(manifests.flatMap((m) => [...referencedObjects(m), ...serviceEnvironmentRefs(m)]));
    if (!this.objects.read() && manifests.length > 0) return;
    this.delivered = new Set(manifests.map((m) => m.id));
    this.sink?.update(manifests, this.objects.current());
    const mirrors = this.mirrors()
      .map((m) => `${m.metadata.uid}:${m.metadata.annotations?.[MIRROR_ANNOTATION]}`)
      .sort()
      .join(',');
    if (mirrors !== this.mirrorShape) {
      this.mirrorShape = mirrors;
      this.options.mirrorsChanged?.();
    }
  }
}
