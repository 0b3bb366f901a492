import {
  Labels,
  identityOf,
  type BackOff,
  type Container,
  type ContainerSummary,
  type ContainerView,
  type DesiredPod,
  type EndedRun,
  type PodView,
  type SandboxSummary,
} from '@kubelet-ts/core';
import type { ProbeVerdict } from './prober.js';

/** What `podViews` reads besides the desired pods and the runtime's containers. */
export interface PodViewInputs {
  readonly node: string;
  /** The runtime's sandboxes, whose ready ones give their pods' IPs. */
  readonly sandboxes?: readonly SandboxSummary[];
  /** The crash back-offs of the last pass. */
  readonly backOffs: readonly BackOff[];
  /** What the probes say of a container, by runtime id. */
  readonly verdict: (id: string) => ProbeVerdict;
  /** While an image's failed pull waits out its back-off: until when, and the failure. */
  readonly pullBackOff?: (
    image: string,
    podId?: string,
  ) => { readonly until: number; readonly message: string; readonly retried: boolean } | undefined;
  /** While a container the engine refused to create or start waits out its back-off. */
  readonly refusedBackOff?: (
    podId: string,
    container: string,
  ) =>
    | {
        readonly until: number;
        readonly reason: 'CreateContainerError' | 'RunContainerError' | 'CreateContainerConfigError';
        readonly message: string;
      }
    | undefined;
}

/** Each desired pod with its source and the actual state of its containers (`GET /pods`). */
export function podViews(desired: readonly DesiredPod[], actual: readonly ContainerSummary[], inputs: PodViewInputs): PodView[] {
  const slots = new Map<string, ContainerSummary[]>();
  for (const c of actual) {
    const identity = identityOf(c.labels);
    if (identity === undefined || identity.node !== inputs.node) continue;
    const key = `${identity.podId}/${identity.container}`;
    slots.set(key, [...(slots.get(key) ?? []), c]);
  }
  const waiting = new Map(inputs.backOffs.map((b) => [`${b.podId}/${b.container}`, b]));
  const podIPs = podIPsOf(inputs.sandboxes ?? [], inputs.node);
  const readySandboxes = new Set<string>();
  for (const s of inputs.sandboxes ?? [])
    if (s.state === 'ready' && s.labels[Labels.node] === inputs.node) readySandboxes.add(s.labels[Labels.sandbox] ?? '');
  return desired.map(({ manifest, source }) => {
    const view = (c: Container): ContainerView => {
      const key = `${manifest.id}/${c.name}`;
      // Newest first: the running container speaks for the slot, else the newest one.
      const found = [...(slots.get(key) ?? [])].sort((a, b) => b.createdAt - a.createdAt);
      const shown = found.find((x) => x.state === 'running') ?? found[0];
      const lastExit = found.find((x) => x.state === 'exited');
      const earlier = found.find((x) => x.state === 'exited' && x !== shown);
      const backOff = waiting.get(key);
      const pull = shown === undefined ? inputs.pullBackOff?.(c.image, manifest.id) : undefined;
      if (shown === undefined) {
        const refused = pull === undefined ? inputs.refusedBackOff?.(manifest.id, c.name) : undefined;
        // The kubelet says ErrImagePull on the sync whose pull failed, ImagePullBackOff on those its back-off holds back.
        const reason = pull !== undefined ? (pull.retried ? 'ImagePullBackOff' : 'ErrImagePull') : (refused?.reason ?? 'ContainerCreating');
        return {
          name: c.name,
          image: c.image,
          state: 'missing',
          restartCount: 0,
          ...(pull === undefined ? {} : { pullBackOff: pull }),
          ...(refused === undefined ? {} : { refused: { until: refused.until, message: refused.message } }),
          waitingReason: reason,
          started: false,
          ready: false,
        };
      }
      const verdict = shown.state === 'running' ? inputs.verdict(shown.id) : {};
      const started = shown.state === 'running' && verdict.started !== false;
      const startedAt = shown.startedAt ?? (shown.state === 'running' ? shown.createdAt : undefined);
      const waitingReason = shown.state === 'created' ? 'ContainerCreating' : backOff === undefined ? undefined : 'CrashLoopBackOff';
      return {
        name: c.name,
        image: shown.image,
        ...(shown.imageRef === undefined ? {} : { imageRef: shown.imageRef }),
        state: shown.state,
        id: shown.id,
        restartCount: Number(shown.labels[Labels.restartCount] ?? 0) || 0,
        ...(lastExit?.exitCode === undefined ? {} : { exitCode: lastExit.exitCode }),
        // A runtime whose list has no start time (Docker's) shows a running container from its
        // creation: the agent starts each container it creates at once, and never one again.
        ...(startedAt === undefined ? {} : { startedAt }),
        ...(shown.state === 'exited' && shown.finishedAt !== undefined ? { finishedAt: shown.finishedAt } : {}),
        ...(backOff === undefined ? {} : { backOff: { until: backOff.until, delayMs: backOff.delayMs } }),
        ...(waitingReason === undefined ? {} : { waitingReason }),
        ...(earlier === undefined ? {} : { lastRun: endedRun(earlier) }),
        started,
        ready: started && verdict.ready !== false,
      };
    };
    return {
      id: manifest.id,
      ...(manifest.uuid === undefined ? {} : { uuid: manifest.uuid }),
      source,
      ...(manifest.namespace === undefined ? {} : { namespace: manifest.namespace }),
      ...(manifest.labels === undefined ? {} : { labels: manifest.labels }),
      ...(manifest.annotations === undefined ? {} : { annotations: manifest.annotations }),
      ...(manifest.hostNetwork === true || !podIPs.has(manifest.id) ? {} : { podIP: podIPs.get(manifest.id)! }),
      ...(readySandboxes.has(manifest.id) ? { sandboxReady: true } : {}),
      ...(manifest.initContainers === undefined ? {} : { initContainers: manifest.initContainers.map(view) }),
      containers: manifest.containers.map(view),
    };
  });
}

/** The IP of each pod of `node` by pod id: its ready sandbox's, where the runtime lists one (what `/pods` shows and pod-IP probes dial). */
export function podIPsOf(sandboxes: readonly SandboxSummary[], node: string): Map<string, string> {
  const podIPs = new Map<string, string>();
  for (const s of sandboxes)
    if (s.state === 'ready' && s.ip !== undefined && s.labels[Labels.node] === node) podIPs.set(s.labels[Labels.sandbox] ?? '', s.ip);
  return podIPs;
}

function endedRun(c: ContainerSummary): EndedRun {
  return {
    id: c.id,
    ...(c.exitCode === undefined ? {} : { exitCode: c.exitCode }),
    ...(c.startedAt === undefined ? {} : { startedAt: c.startedAt }),
    ...(c.finishedAt === undefined ? {} : { finishedAt: c.finishedAt }),
  };
}
