import type { Logger, PodKey, PodStatus, RecordedEvent } from '@kubelet-ts/core';
import { PatchStrategy, setHeaderOptions, type CoreV1Api } from '@kubernetes/client-node';
import { apiStatus } from './api-errors.js';
import type { UnrunnablePod } from './api-pod-source.js';

/** What the writer reads of the agent: its pods' statuses and their changes, and its events. */
export interface StatusSource {
  podStatuses(): Promise<
    ReadonlyArray<{
      readonly uid: string;
      readonly key: PodKey;
      readonly podId: string;
      readonly source: string;
      readonly status: PodStatus;
    }>
  >;
  watchPodStatuses(listener: (uids: readonly string[]) => void): () => void;
  watchEvents(listener: (event: RecordedEvent) => void): () => void;
}

/** What `PodStatusWriter` needs: the API, the agent's pod statuses, and which pods (and mirror pods) are the API's. */
export interface PodStatusWriterOptions {
  readonly api: CoreV1Api;
  readonly agent: StatusSource;
  /** The source whose pods are the API's (`api`): their status is written to them. */
  readonly source: string;
  /** The mirror pod of a static pod (by its id), when it has one: a static pod's status is written to it. */
  readonly mirrorOf?: (podId: string) => PodKey | undefined;
  readonly logger: Logger;
}

const STRATEGIC = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

/** A status the writer sets in part: an unrunnable pod's phase and why. */
type PodStatusPatch = Pick<PodStatus, 'phase' | 'reason' | 'message'>;

/**
 * The strategic merge patch that makes the API's pod status the agent's `status`. A status sent as
 * it is would only ever add: conditions are merged by type and their fields one by one, so a
 * condition's `reason` and `message` from when it was False stayed once it turned True ("Ready:
 * True, containers with unready status: [main]"), and a pod's `reason` stayed past its phase. The
 * kubelet diffs against the API's status (`CreateTwoWayMergePatch`), which deletes what is gone;
 * here what the kubelet owns and the agent left out is deleted (`null`), conditions the agent does
 * not write (a readiness gate's, `DisruptionTarget`) are kept, and `podIPs`, merged by address,
 * are replaced as a whole (a new sandbox's address must not join the old). Container statuses are
 * atomic lists in the API: they are replaced as they are.
 */
export function statusPatch(status: PodStatus | PodStatusPatch): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...status, reason: status.reason ?? null, message: status.message ?? null };
  if ('conditions' in status)
    patch['conditions'] = status.conditions.map((c) => ({ ...c, reason: c.reason ?? null, message: c.message ?? null }));
  if ('podIPs' in status && status.podIPs !== undefined) patch['podIPs'] = [...status.podIPs, { $patch: 'replace' }];
  if ('hostIPs' in status && status.hostIPs !== undefined) patch['hostIPs'] = [...status.hostIPs, { $patch: 'replace' }];
  return patch;
}

/**
 * The status manager's half that talks to the API server (`pkg/kubelet/status/status_manager.go`):
 * each API pod whose status changed in the agent's model is patched to `pods/status` (a strategic
 * merge patch, so the conditions are merged by type and those the kubelet does not own are kept;
 * the pod's uid in the patch, so that a pod made again under its name is not written over). Changes
 * that come while a write is on its way are written after it, the latest only. A pod marked for
 * deletion whose containers are all stopped (`PodTerminated`) is deleted, with grace 0 and its uid
 * as precondition: the moment a kubelet lets the API object go. A pod the agent cannot run gets
 * `Failed` with the fields that are wrong.
 */
export class PodStatusWriter {
  private readonly stops: Array<() => void> = [];
  private readonly dirty = new Set<string>();
  /** Pods by id whose status is to be written again whatever changed (see `rewrite`). */
  private readonly dirtyPods = new Set<string>();
  private mirrorsDirty = false;
  private writing: Promise<void> | undefined;
  private closed = false;
  /** The key of each API pod seen, by its pod id: a `PodTerminated` event names the pod by its id. */
  private readonly keys = new Map<string, PodKey>();
  /** Patches written, for the node's figures and tests. */
  patches = 0;

  constructor(private readonly options: PodStatusWriterOptions) {}

  start(): void {
    const { agent } = this.options;
    this.stops.push(
      agent.watchPodStatuses((uids) => {
        for (const uid of uids) this.dirty.add(uid);
        this.kick();
      }),
      agent.watchEvents((event) => {
        if (event.type === 'PodTerminated' && event.source === this.options.source && event.podId !== undefined)
          void this.deleteTerminated(event.podId);
      }),
    );
    // Whatever the model holds now (an agent restarted with pods running) is written once.
    void agent.podStatuses().then((records) => {
      for (const r of records) this.dirty.add(r.uid);
      this.kick();
    });
  }

  /** Writes the status of the pod `podId` again (its mirror pod was just made). */
  rewrite(podId: string): void {
    this.dirtyPods.add(podId);
    this.kick();
  }

  /** Writes the status of every static pod again (the mirror pods changed: one may have come, or come again). */
  rewriteMirrors(): void {
    this.mirrorsDirty = true;
    this.kick();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const stop of this.stops.splice(0)) stop();
    await this.writing;
  }

  /** Writes `Failed` with why for a pod the agent cannot run, as the kubelet's admission writes a rejected pod's. */
  async unrunnable({ pod, errors }: UnrunnablePod): Promise<void> {
    const message = `Pod was rejected: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`;
    await this.patch(
      { namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid },
      { phase: 'Failed', reason: 'UnsupportedPodSpec', message },
    ).catch((error: unknown) => this.failed('status of an unrunnable pod not written', error));
  }

  private kick(): void {
    if (this.writing !== undefined || this.closed) return;
    this.writing = this.flush().finally(() => {
      this.writing = undefined;
      if ((this.dirty.size > 0 || this.dirtyPods.size > 0 || this.mirrorsDirty) && !this.closed) this.kick();
    });
  }

  private async flush(): Promise<void> {
    const wanted = new Set(this.dirty);
    const wantedPods = new Set(this.dirtyPods);
    const mirrors = this.mirrorsDirty;
    this.dirty.clear();
    this.dirtyPods.clear();
    this.mirrorsDirty = false;
    const records = await this.options.agent.podStatuses();
    for (const record of records) {
      const fromApi = record.source === this.options.source;
      if (fromApi) this.keys.set(record.podId, record.key);
      if (!wanted.has(record.uid) && !wantedPods.has(record.podId) && !(mirrors && !fromApi)) continue;
      const key = fromApi ? record.key : this.options.mirrorOf?.(record.podId);
      if (key === undefined) continue;
      await this.patch(key, record.status).catch((error: unknown) => {
        // Gone from the API (deleted meanwhile, or another uid now): nothing to write.
        if (apiStatus(error) === 404 || apiStatus(error) === 409) return;
        this.dirty.add(record.uid);
        this.failed('pod status not written', error);
      });
    }
  }

  private async patch(key: PodKey, status: PodStatus | PodStatusPatch): Promise<void> {
    await this.options.api.patchNamespacedPodStatus(
      { name: key.name, namespace: key.namespace, body: { metadata: { uid: key.uid }, status: statusPatch(status) } },
      STRATEGIC,
    );
    this.patches++;
  }

  private async deleteTerminated(podId: string): Promise<void> {
    const key = this.keys.get(podId);
    if (key === undefined) return;
    try {
      await this.options.api.deleteNamespacedPod({
        name: key.name,
        namespace: key.namespace,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid: key.uid } },
      });
      this.options.logger.info({ pod: `${key.namespace}/${key.name}`, uid: key.uid }, 'api: terminated pod deleted');
    } catch (error) {
      if (apiStatus(error) === 404 || apiStatus(error) === 409) return;
      this.failed('terminated pod not deleted', error);
    }
  }

  private failed(what: string, error: unknown): void {
    this.options.logger.warn({ err: error }, `api: ${what}: ${(error as Error).message}`);
  }
}
