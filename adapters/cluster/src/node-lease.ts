import type { Logger } from '@kubelet-ts/core';
import type { CoordinationV1Api, V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { apiStatus, Retry } from './api-errors.js';

/** The namespace of the nodes' Leases. */
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/** What `NodeLease` renews: the API, the Node it belongs to, the duration, and whether the agent is healthy. */
export interface NodeLeaseOptions {
  readonly api: CoordinationV1Api;
  readonly nodeName: string;
  /** The Node's uid: the Lease is owned by the Node, so it goes with it. */
  readonly nodeUid: string;
  /** `--node-lease-duration-seconds` (40): the controller-manager marks the node NotReady when its Lease is this old. */
  readonly durationSeconds?: number;
  /** Whether the agent is healthy: an unhealthy agent does not renew, so that the cluster sees it (virtual-kubelet's rule). */
  readonly healthy: () => boolean;
  readonly logger: Logger;
}

/**
 * The node's heartbeat, as the kubelet's lease controller keeps it (component-helpers'
 * `apis/lease`): the Lease `<node>` in `kube-node-lease`, held by the node and owned by its Node,
 * renewed every quarter of its duration (10 s for 40) with 4 % of jitter; a failed renewal is
 * tried again after 200 ms, doubling to 7 s. Not renewed while the agent is unhealthy.
 */
export class NodeLease {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private lease: V1Lease | undefined;
  private readonly retry = new Retry(200, 7_000);
  /** Renewals made, for the node's own figures. */
  renewals = 0;

  constructor(private readonly options: NodeLeaseOptions) {}

  start(): void {
    const interval = ((this.options.durationSeconds ?? 40) * 1000) / 4;
    let due = Date.now();
    let lateSaid = 0;
    const tick = async () => {
      if (this.closed) return;
      let next = interval * (1 + Math.random() * 0.04);
      if (this.options.healthy()) {
        try {
          const began = Date.now();
          await this.renew();
          this.retry.reset();
          // A renewal that comes late lets the node go NotReady: said (once a minute) with where the
          // time went, the event loop (the timer fired late) or the API server (the answer did).
          const answered = Date.now();
          if ((began - due > interval / 2 || answered - began > interval / 2) && answered - lateSaid > 60_000) {
            lateSaid = answered;
            this.options.logger.warn(
              { node: this.options.nodeName, timerLateMs: began - due, answerMs: answered - began },
              `node lease renewed late: its timer fired ${began - due} ms late, the API server answered in ${answered - began} ms`,
            );
          }
        } catch (error) {
          next = this.retry.next();
          this.lease = undefined;
          this.options.logger.warn(
            { err: error, node: this.options.nodeName, retryInMs: next },
            `node lease not renewed: ${(error as Error).message}`,
          );
        }
      }
      due = Date.now() + next;
      if (!this.closed) this.timer = setTimeout(tick, next);
    };
    void tick();
  }

  /** Renews the Lease now (making it when it is not there). */
  async renew(): Promise<void> {
    const { api, nodeName: name } = this.options;
    const namespace = NODE_LEASE_NAMESPACE;
    if (this.lease === undefined) {
      try {
        this.lease = await api.readNamespacedLease({ name, namespace });
      } catch (error) {
        if (apiStatus(error) !== 404) throw error;
        this.lease = await api.createNamespacedLease({ namespace, body: this.fresh() });
        this.renewals++;
        return;
      }
    }
    const renewed: V1Lease = {
      ...this.lease,
      spec: {
        ...this.lease.spec,
        holderIdentity: name,
        leaseDurationSeconds: this.options.durationSeconds ?? 40,
        renewTime: microTime(new Date()),
      },
    };
    try {
      this.lease = await api.replaceNamespacedLease({ name, namespace, body: renewed });
      this.renewals++;
    } catch (error) {
      // Changed meanwhile (a conflict) or gone: read it again at the next try.
      this.lease = undefined;
      throw error;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  private fresh(): V1Lease {
    const { nodeName: name, nodeUid: uid } = this.options;
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        namespace: NODE_LEASE_NAMESPACE,
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid }],
      },
      spec: { holderIdentity: name, leaseDurationSeconds: this.options.durationSeconds ?? 40, renewTime: microTime(new Date()) },
    };
  }
}

/**
 * A `MicroTime` as the API server reads one: RFC 3339 with six fractional digits. The client's model
 * types it as a `Date` subclass, which its serializer would write with three; a string is passed
 * through as it is (its serializer does not know the type), so the string is handed over under it.
 */
export function microTime(at: Date): V1MicroTime {
  return at.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as V1MicroTime;
}
