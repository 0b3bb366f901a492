import type { Duplex } from 'node:stream';
import {
  KubeletError,
  Labels,
  identityOf,
  podUid,
  plan,
  readLogText,
  reportPlan,
  type AdmissionRefusal,
  type Clock,
  type ContainerDetails,
  type ContainerLogRequest,
  type ContainerLogSource,
  type ContainerTextRequest,
  type ContainerManifest,
  type ContainerRuntime,
  type ContainerStreaming,
  type ContainerTarget,
  type PodTarget,
  type StreamOptions,
  type StreamSession,
  type ContainerStats,
  type HealthView,
  type LogLine,
  type PlanReport,
  type PodListing,
  type PodView,
} from '@kubelet-ts/core';
import { logTarget, podTarget, runningTarget } from './log-target.js';
import { nodeAddress } from './node-address.js';
import type { KubeletMetrics } from './metrics.js';
import type { PodCache } from './pod-cache.js';
import { podViews, type PodViewInputs } from './pod-views.js';
import type { Prober } from './prober.js';
import type { PodStatusManager, PodStatusRecord } from './pod-status-manager.js';
import type { PodTerminations } from './pod-terminations.js';
import type { SourceIntake } from './source-intake.js';
import type { PassResult } from './sync-loop.js';
import type { SyncPass } from './sync-pass.js';

export interface AgentReadApiOptions {
  readonly runtime: ContainerRuntime;
  /** What it shows of the runtime: reads never call the engine (but `containerInfo`'s inspect and `stats`). */
  readonly cache: PodCache;
  readonly hostname: string;
  readonly clock: Clock;
  readonly intake: SourceIntake;
  /** The pods on their way out that have left their source, shown after the desired ones. */
  readonly terminations?: Pick<PodTerminations, 'pods' | 'pod'>;
  readonly pass: SyncPass;
  /** The pod status model: each listing brings it up to date, and renders from it. */
  readonly statuses?: PodStatusManager;
  /** Whether containers have started and are ready, as their probes say. */
  readonly prober: Pick<Prober, 'verdict'>;
  /** While an image's failed pull waits out its back-off (the executor's). */
  readonly pullBackOff?: (
    image: string,
    podId?: string,
  ) => { readonly until: number; readonly message: string; readonly retried: boolean } | undefined;
  /** While a container the engine refused to create or start backs off (the executor's). */
  readonly refusedBackOff?: PodViewInputs['refusedBackOff'];
  /**
   * The node's address for `status.hostIP` (and a hostNetwork pod's `podIP`): the address ports are
   * published on, unless it is a loopback one; then the host's first non-internal IPv4 address, if any.
   */
  readonly hostIP?: string;
  readonly metrics: KubeletMetrics;
  readonly healthThresholdMs: number;
  /** The agent's lifecycle state, and when it started. */
  readonly lifecycle: () => { readonly state: 'new' | 'running' | 'closed'; readonly startedAt: number };
}

/**
 * What the agent shows of itself (the `AgentView` that `/pods`, `/plan`, `/metrics`,
 * `/containerInfo` and `/healthz` serve): it reads the sources' state, the runtime and the last
 * pass, and changes nothing.
 */
export class AgentReadApi {
  private readonly uids = new WeakMap<ContainerManifest, { readonly source: string; readonly uid: string }>();

  constructor(private readonly options: AgentReadApiOptions) {}

  async pods(): Promise<PodView[]> {
    return (await this.viewsWithManifests()).map(({ view }) => view);
  }

  /**
   * `pods()` with their manifests, the node's name and address: what a v1 `PodList` is rendered
   * from. The rendering is the server's (it needs `toV1Pod`, which the runner does not import).
   */
  async podListing(): Promise<PodListing> {
    const { runtime, hostname } = this.options;
    const hostIP = nodeAddress(this.options.hostIP);
    const { pods, statuses } = await this.observed(hostIP);
    return {
      pods:
        statuses === undefined ? pods : pods.map((p, i) => ({ ...p, status: statuses[i]!.status, statusVersion: statuses[i]!.version })),
      nodeName: hostname,
      runtime: runtime.name,
      ...(hostIP === undefined ? {} : { hostIP }),
    };
  }

  /** Each pod's status in the model, brought up to date now (see `PodStatusManager`); none without one. */
  async podStatuses(): Promise<PodStatusRecord[]> {
    return (await this.observed(nodeAddress(this.options.hostIP))).statuses ?? [];
  }

  /** The pods with their views (and each view as JSON, made once), and the model brought up to date with them. */
  private async observed(hostIP: string | undefined) {
    const { runtime, statuses } = this.options;
    // Each view as JSON once: the status model and the renderer both know a pod unchanged by it.
    const pods = (await this.viewsWithManifests()).map((p) => ({ ...p, viewJson: JSON.stringify(p.view) }));
    const observed = statuses?.observe(
      pods.map(({ view, manifest, viewJson, refusal }) => ({
        uid: this.uidOf(manifest, view.source),
        view,
        manifest,
        viewJson,
        ...(refusal === undefined ? {} : { refusal }),
      })),
      { runtime: runtime.name, ...(hostIP === undefined ? {} : { hostIP }) },
    );
    return { pods: pods.map(({ view, manifest, viewJson }) => ({ view, manifest, viewJson })), statuses: observed };
  }

  /**
   * Every pod the agent knows with its view: those it runs, those on their way out, and those its
   * admission refused (with the refusal: their status is `Failed`, whatever the view says).
   */
  private async viewsWithManifests(): Promise<Array<{ view: PodView; manifest: ContainerManifest; refusal?: AdmissionRefusal }>> {
    const { intake, cache, hostname, pass, prober, pullBackOff, refusedBackOff, terminations } = this.options;
    const leaving = terminations?.pods() ?? [];
    const { pods: running, refused } = intake.desired();
    const desired = leaving.length === 0 && refused.length === 0 ? running : [...running, ...leaving, ...refused.map((r) => r.pod)];
    const firstRefused = running.length + leaving.length;
    const { containers: actual, sandboxes } = cache.snapshot();
    const views = podViews(desired, actual, {
      node: hostname,
      sandboxes,
      backOffs: pass.currentBackOffs(),
      verdict: (id) => prober.verdict(id),
      ...(pullBackOff === undefined ? {} : { pullBackOff }),
      ...(refusedBackOff === undefined ? {} : { refusedBackOff }),
    });
    return views.map((view, i) => ({
      view,
      manifest: desired[i]!.manifest,
      ...(i < firstRefused ? {} : { refusal: refused[i - firstRefused]!.refusal }),
    }));
  }

  async plan(): Promise<PlanReport> {
    const { intake, cache, pass } = this.options;
    const desired = intake.desired();
    const allowRemovals = intake.allSeen();
    const { containers: actual, sandboxes } = cache.snapshot();
    return reportPlan(plan(pass.planInput(desired.pods, allowRemovals, actual, sandboxes, new Set())), intake.unseen());
  }

  metrics(): Promise<{ contentType: string; body: string }> {
    return this.options.metrics.text();
  }

  /** The pod's uid, remembered per manifest object: a derived one is a hash, and a list of 1,000 pods asks it of each. */
  private uidOf(manifest: ContainerManifest, source: string): string {
    const known = this.uids.get(manifest);
    if (known !== undefined && known.source === source) return known.uid;
    const uid = podUid(manifest, { node: this.options.hostname, source });
    this.uids.set(manifest, { source, uid });
    return uid;
  }

  /** A desired pod's namespace and uid (what an event about it is filed under). */
  podOf(podId: string): { namespace: string; uid: string } | undefined {
    const { pods, refused } = this.options.intake.desired();
    const found =
      pods.find((p) => p.manifest.id === podId) ??
      this.options.terminations?.pod(podId) ??
      refused.find((r) => r.pod.manifest.id === podId)?.pod;
    return found === undefined
      ? undefined
      : { namespace: found.manifest.namespace ?? 'default', uid: this.uidOf(found.manifest, found.source) };
  }

  async containerInfo(name: string): Promise<ContainerDetails | undefined> {
    const id = await this.find(name);
    return id === undefined ? undefined : this.options.runtime.inspect(id);
  }

  async stats(name: string): Promise<ContainerStats | undefined> {
    const { runtime } = this.options;
    const figures = runtime.capabilities.stats;
    if (figures === undefined)
      throw new KubeletError('Unsupported', `the ${runtime.name} runtime gives no container figures`, { adapter: runtime.name });
    const id = await this.find(name);
    return id === undefined ? undefined : figures.stats(id);
  }

  /** The output of the container `request` names (see `logTarget` for which run), from the runtime. */
  async containerLogs(request: ContainerLogRequest): Promise<AsyncIterable<LogLine>> {
    const { source, id, options } = await this.logRead(request);
    return source.logs(id, options);
  }

  /** The same as text, from the runtime's own block read when it has one. */
  async containerText(request: ContainerTextRequest): Promise<AsyncIterable<Uint8Array>> {
    const { source, id, options } = await this.logRead(request);
    return readLogText(source, id, options);
  }

  private async logRead<R extends ContainerLogRequest>(request: R) {
    const { runtime } = this.options;
    const source: ContainerLogSource | undefined = runtime.capabilities.logs;
    if (source === undefined)
      throw new KubeletError('Unsupported', `the ${runtime.name} runtime cannot read what containers print`, { adapter: runtime.name });
    const id = logTarget(await this.pods(), request);
    const { namespace: _namespace, pod: _pod, container: _container, previous: _previous, ...options } = request;
    return { source, id, options };
  }

  /** Runs a command in the running container `target` names (see `runningTarget`), streamed by the runtime. */
  async exec(target: ContainerTarget, command: readonly string[], options: StreamOptions): Promise<StreamSession> {
    return this.streaming().exec(runningTarget(await this.pods(), target), command, options);
  }

  /** Attaches to the main process of the running container `target` names. */
  async attach(target: ContainerTarget, options: StreamOptions): Promise<StreamSession> {
    return this.streaming().attach(runningTarget(await this.pods(), target), options);
  }

  /** A connection to `port` inside the network namespace of the pod's ready sandbox. */
  async portForward(target: PodTarget, port: number): Promise<Duplex> {
    const streams = this.streaming();
    const { view, where } = podTarget(await this.pods(), target);
    const sandbox = this.options.cache
      .snapshot()
      .sandboxes.find(
        (s) => s.state === 'ready' && s.labels[Labels.sandbox] === view.id && s.labels[Labels.node] === this.options.hostname,
      );
    if (sandbox === undefined) throw new KubeletError('NotFound', `${where} has no running sandbox (its network namespace) to forward to`);
    return streams.portForward(sandbox.id, port);
  }

  private streaming(): ContainerStreaming {
    const { runtime } = this.options;
    const streams = runtime.capabilities.streaming;
    if (streams === undefined)
      throw new KubeletError('Unsupported', `the ${runtime.name} runtime cannot exec, attach or port-forward`, { adapter: runtime.name });
    return streams;
  }

  /**
   * The id of a container this agent manages on this node, by its runtime name, its id, or
   * `<manifest id>/<container name>`; the running one when an exited one is kept beside it.
   */
  private async find(name: string): Promise<string | undefined> {
    const { cache, hostname } = this.options;
    const wanted = name.replace(/^\//, '');
    let found: string | undefined;
    for (const c of cache.snapshot().containers) {
      const identity = identityOf(c.labels);
      if (identity === undefined || identity.node !== hostname) continue;
      if (c.name !== wanted && c.id !== wanted && `${identity.podId}/${identity.container}` !== wanted) continue;
      if (c.state === 'running') return c.id;
      found ??= c.id;
    }
    return found;
  }

  health(): HealthView {
    const { clock, healthThresholdMs } = this.options;
    const { state, startedAt } = this.options.lifecycle();
    const lastPass: PassResult | undefined = this.options.pass.lastPass;
    const now = clock.now();
    if (state !== 'running') return { healthy: false, message: `the agent is ${state}` };
    const since = lastPass === undefined ? startedAt : lastPass.startedAt + lastPass.durationMs;
    const age = now - since;
    const last = lastPass === undefined ? {} : { lastPassAt: lastPass.startedAt + lastPass.durationMs };
    if (age > healthThresholdMs) {
      return { healthy: false, ...last, message: `no sync pass has completed for ${age} ms (threshold ${healthThresholdMs} ms)` };
    }
    // A source that is down is a part of the agent that does not work: a server that cannot bind its
    // port leaves its clients to whatever holds it, and the agent must say so where it can.
    const down = this.options.intake.statuses().filter((s) => s.down !== undefined);
    if (down.length > 0)
      return { healthy: false, ...last, message: `source ${down.map((s) => `${s.name} is down: ${s.down}`).join('; source ')}` };
    const error = lastPass?.error === undefined ? '' : `; the last pass failed: ${lastPass.error.message}`;
    return { healthy: true, ...last, message: `last pass ${lastPass === undefined ? 'not yet run' : `completed ${age} ms ago`}${error}` };
  }
}
