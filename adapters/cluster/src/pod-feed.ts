import type { Logger } from '@kubelet-ts/core';
import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { Retry } from './api-errors.js';
import { getJson } from './api-json.js';
import type { ApiPod } from './api-pod-source.js';

/** What a node's pod source hears of its pods from a shared feed. */
export interface PodFeedListener {
  /** Every pod bound to the node now (after a list: a first one, or one after a watch was too old). */
  replace(pods: readonly ApiPod[]): void;
  /** One pod added, changed or deleted. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: ApiPod): void;
  /** The feed cannot reach the API server (it keeps trying; the last good set stands). */
  failed(error: Error): void;
}

interface BoundPod extends ApiPod {
  readonly spec?: { readonly nodeName?: string };
}

/** What `PodFeed` watches with: the cluster, and credentials that may list every pod. */
export interface PodFeedOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
}

/**
 * One list and watch of every bound pod (`spec.nodeName!=`), handed to each node's pod source by
 * its node name: many nodes of one process (`kubelet-ts hollow`) hold one watch instead of one each
 * (a thousand watches were a thousand connections through the API server's port, where a userland
 * proxy gave up). Resumed and relisted as `ApiPodSource` does its own; credentials that may list
 * every pod are needed (an admin's, not one node's).
 */
export class PodFeed {
  private readonly listeners = new Map<string, PodFeedListener>();
  private readonly byNode = new Map<string, Map<string, ApiPod>>();
  private resourceVersion = '';
  private abort: AbortController | undefined;
  private closed = false;
  private started = false;
  private listed = false;
  private readonly retry = new Retry(1_000, 30_000);

  constructor(private readonly options: PodFeedOptions) {}

  /** Hands `node`'s pods to `listener` (those known now at once); returns the way to stop. */
  subscribe(node: string, listener: PodFeedListener): () => void {
    this.listeners.set(node, listener);
    if (this.listed) listener.replace([...(this.byNode.get(node)?.values() ?? [])]);
    if (!this.started) {
      this.started = true;
      void this.run();
    }
    return () => {
      if (this.listeners.get(node) === listener) this.listeners.delete(node);
    };
  }

  close(): void {
    this.closed = true;
    this.retry.cancel();
    this.abort?.abort();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        if (this.resourceVersion === '') await this.list();
        await this.watch();
        this.retry.reset();
      } catch (error) {
        if (this.closed) return;
        if ((error as { code?: number }).code === 410) this.resourceVersion = '';
        const delay = this.retry.next();
        const said = new Error(`api: ${(error as Error).message}; trying again in ${delay} ms`);
        for (const l of this.listeners.values()) l.failed(said);
        await this.retry.wait(delay, () => this.closed);
      }
    }
  }

  private async list(): Promise<void> {
    const list = (await getJson(this.options.kubeConfig, `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.nodeName!=')}`)) as {
      metadata?: { resourceVersion?: string };
      items?: BoundPod[];
    };
    this.byNode.clear();
    // A list's items carry no apiVersion or kind (see ApiPodSource.list).
    for (const pod of list.items ?? []) this.set({ ...pod, apiVersion: 'v1', kind: 'Pod' });
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    this.listed = true;
    for (const [node, listener] of this.listeners) listener.replace([...(this.byNode.get(node)?.values() ?? [])]);
  }

  private set(pod: BoundPod): string | undefined {
    const node = pod.spec?.nodeName;
    if (node === undefined || node === '') return undefined;
    let pods = this.byNode.get(node);
    if (pods === undefined) this.byNode.set(node, (pods = new Map()));
    pods.set(pod.metadata.uid, pod);
    return node;
  }

  private watch(): Promise<void> {
    return new Promise((resolve, reject) => {
      let failed: (Error & { code?: number | undefined }) | undefined;
      let controller: AbortController | undefined;
      void new Watch(this.options.kubeConfig)
        .watch(
          '/api/v1/pods',
          { fieldSelector: 'spec.nodeName!=', resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
          (type: string, object: BoundPod & { code?: number; message?: string }) => {
            if (type === 'ERROR') {
              failed = Object.assign(new Error(`watch: ${object.message ?? 'error'}`), { code: object.code });
              controller?.abort();
              return;
            }
            if (object.metadata?.resourceVersion !== undefined) this.resourceVersion = object.metadata.resourceVersion;
            if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
            const node = object.spec?.nodeName;
            if (node === undefined || node === '') return;
            if (type === 'DELETED') this.byNode.get(node)?.delete(object.metadata.uid);
            else this.set(object);
            this.listeners.get(node)?.apply(type, object);
          },
          (error: unknown) => ((failed ?? error) ? reject(failed ?? error) : resolve()),
        )
        .then((c) => {
          controller = c;
          this.abort = c;
          if (this.closed) c.abort();
        }, reject);
    });
  }
}
