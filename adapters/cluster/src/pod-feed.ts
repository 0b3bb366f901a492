import type { Logger } from '@kubelet-ts/core';
import type { KubeConfig } from '@kubernetes/client-node';
import { ListWatch } from './list-watch.js';
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
 * proxy gave up), listed and watched as `ApiPodSource` does its own (`ListWatch`); credentials that
 * may list every pod are needed (an admin's, not one node's). A pod's `apiVersion` and `kind`, which
 * a list's items lack, are the receiver's to give back.
 */
export class PodFeed {
  private readonly listeners = new Map<string, PodFeedListener>();
  private readonly byNode = new Map<string, Map<string, ApiPod>>();
  private watching: ListWatch<BoundPod> | undefined;
  private listed = false;

  constructor(private readonly options: PodFeedOptions) {}

  /** Hands `node`'s pods to `listener` (those known now at once); returns the way to stop. */
  subscribe(node: string, listener: PodFeedListener): () => void {
    this.listeners.set(node, listener);
    if (this.listed) listener.replace([...(this.byNode.get(node)?.values() ?? [])]);
    if (this.watching === undefined) {
      this.watching = new ListWatch<BoundPod>({
        kubeConfig: this.options.kubeConfig,
        path: '/api/v1/pods',
        fieldSelector: 'spec.nodeName!=',
        listed: (items) => {
          this.byNode.clear();
          for (const pod of items) this.set(pod);
          this.listed = true;
          for (const [name, l] of this.listeners) l.replace([...(this.byNode.get(name)?.values() ?? [])]);
        },
        changed: (type, pod) => {
          const name = pod.spec?.nodeName;
          if (name === undefined || name === '') return;
          if (type === 'DELETED') this.byNode.get(name)?.delete(pod.metadata.uid);
          else this.set(pod);
          this.listeners.get(name)?.apply(type, pod);
        },
        failed: (error, delay) => {
          const said = new Error(`api: ${error.message}; trying again in ${delay} ms`);
          for (const l of this.listeners.values()) l.failed(said);
        },
      });
      this.watching.start();
    }
    return () => {
      if (this.listeners.get(node) === listener) this.listeners.delete(node);
    };
  }

  close(): void {
    this.watching?.close();
  }

  private set(pod: BoundPod): void {
    const node = pod.spec?.nodeName;
    if (node === undefined || node === '') return;
    let pods = this.byNode.get(node);
    if (pods === undefined) this.byNode.set(node, (pods = new Map()));
    pods.set(pod.metadata.uid, pod);
  }
}
