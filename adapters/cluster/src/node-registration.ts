import type { ImageRecord, Logger } from '@kubelet-ts/core';
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { apiStatus, Retry } from './api-errors.js';
import { nodeLabels, nodeObject, nodeStatus, type NodeHealth, type NodeSpecFacts } from './node-object.js';

/** What `NodeRegistration` writes: the Node's facts, health and images, and how often its status is computed and written. */
export interface NodeRegistrationOptions {
  readonly api: CoreV1Api;
  readonly facts: NodeSpecFacts;
  /** The agent's health now: the Ready condition says it. */
  readonly health: () => NodeHealth;
  /** The images the runtime holds (`status.images`); none when it cannot say. */
  readonly images?: () => Promise<readonly ImageRecord[]>;
  readonly logger: Logger;
  /** How often the status is computed and, when it changed, patched (the kubelet's `nodeStatusUpdateFrequency`, 10 s). */
  readonly updateFrequencyMs?: number;
  /** How often it is patched even when it did not change (`--node-status-report-frequency`, 5 min). */
  readonly reportFrequencyMs?: number;
}

const STRATEGIC = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

/**
 * The agent's Node, as the kubelet keeps it (`registerWithAPIServer`, `updateNodeStatus`): created
 * at start, or, when a Node of that name is there already (the agent restarted), its labels and
 * status brought up to date; then its status computed every `updateFrequencyMs` and patched when it
 * changed (a condition, an address, a figure) or `reportFrequencyMs` has passed since the last
 * patch. Registration is tried again with back-off until it succeeds: nothing else of the node
 * starts before it (the Lease needs the Node's uid; the API source, the Node).
 */
export class NodeRegistration {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private node: V1Node | undefined;
  private lastReport = 0;
  private lastShape = '';
  private readonly retry = new Retry(200, 7_000);
  private images: readonly ImageRecord[] = [];

  constructor(private readonly options: NodeRegistrationOptions) {}

  /** The runtime's images now; the last known when it cannot answer. */
  private async readImages(): Promise<readonly ImageRecord[]> {
    return (await this.options.images?.().catch(() => undefined)) ?? this.images;
  }

  /** Registers the Node (retrying until it can, or until `close`); resolves with it, or undefined once closed. */
  async register(): Promise<V1Node | undefined> {
    const { api, facts, health, logger } = this.options;
    while (!this.closed) {
      try {
        this.images = await this.readImages();
        const wanted = nodeObject(facts, health(), new Date(), this.images);
        try {
          this.node = await api.createNode({ body: wanted });
          // A typed create drops what client-node's model lacks (declaredFeatures): its status again, as a patch.
          if (facts.declaredFeatures !== undefined && facts.declaredFeatures.length > 0)
            this.node = await this.patchStatus(this.node.status?.conditions ?? []);
          logger.info({ node: facts.name }, 'node registered');
        } catch (error) {
          if (apiStatus(error) !== 409) throw error;
          // There already: the agent restarted, or another registered the name. Ours now, as the kubelet
          // takes it: its labels brought up to date, its taints left as they are (a node may not change
          // its own: NodeRestriction refuses it; they are the cluster's once registered).
          const existing = await api.readNode({ name: facts.name });
          this.node = await api.patchNode({ name: facts.name, body: { metadata: { labels: nodeLabels(facts) } } }, STRATEGIC);
          this.node = await this.patchStatus(existing.status?.conditions ?? []);
          logger.info({ node: facts.name }, 'node registered again (it was there)');
        }
        this.lastReport = Date.now();
        this.lastShape = this.shape(this.node.status?.conditions ?? []);
        this.retry.reset();
        return this.node;
      } catch (error) {
        const delay = this.retry.next();
        logger.warn({ err: error, node: facts.name, retryInMs: delay }, `cannot register the node: ${(error as Error).message}`);
        await this.retry.wait(delay, () => this.closed);
      }
    }
    return undefined;
  }

  /** Keeps the status up to date (see the class). */
  start(): void {
    const every = this.options.updateFrequencyMs ?? 10_000;
    const tick = async () => {
      if (this.closed) return;
      await this.update().catch((error: unknown) =>
        this.options.logger.warn({ err: error, node: this.options.facts.name }, `node status not written: ${(error as Error).message}`),
      );
      if (!this.closed) this.timer = setTimeout(tick, every);
    };
    this.timer = setTimeout(tick, every);
  }

  /** Patches the status now when it changed, or when the report period has passed. */
  async update(): Promise<void> {
    const { reportFrequencyMs = 300_000 } = this.options;
    const before = this.node?.status?.conditions ?? [];
    this.images = await this.readImages();
    const shape = this.shape(before);
    if (shape === this.lastShape && Date.now() - this.lastReport < reportFrequencyMs) return;
    this.node = await this.patchStatus(before);
    this.lastReport = Date.now();
    this.lastShape = shape;
  }

  /** The Node's uid, once registered. */
  get uid(): string | undefined {
    return this.node?.metadata?.uid;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.retry.cancel();
  }

  /** The status the agent would write now, without its times: what tells a change. */
  private shape(before: NonNullable<NonNullable<V1Node['status']>['conditions']>): string {
    const { facts, health } = this.options;
    return JSON.stringify(nodeStatus(facts, health(), new Date(0), before, this.images), (k, v) => (k.endsWith('Time') ? undefined : v));
  }

  private patchStatus(before: NonNullable<NonNullable<V1Node['status']>['conditions']>): Promise<V1Node> {
    const { api, facts, health } = this.options;
    return api.patchNodeStatus(
      { name: facts.name, body: { status: nodeStatus(facts, health(), new Date(), before, this.images) } },
      STRATEGIC,
    );
  }
}
