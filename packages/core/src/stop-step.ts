import { DEFAULT_GRACE_PERIOD_SECONDS } from './manifest.js';
import { Labels } from './naming.js';
import type { PlanAction, PlanReason } from './plan-types.js';
import type { ContainerSummary } from './runtime.js';

/** The grace period a container was made with (its label), for stopping it once its manifest is gone. */
export function graceFromLabel(c: ContainerSummary): number {
  const value = Number(c.labels[Labels.gracePeriod]);
  return Number.isFinite(value) && value >= 0 ? value : DEFAULT_GRACE_PERIOD_SECONDS;
}

/** Stops (when running, after its preStop hook) and removes `c`. */
export function removal(podId: string, container: string, c: ContainerSummary, reason: PlanReason, graceSeconds: number): PlanAction {
  const running = c.state === 'running';
  const preStop = running ? c.labels[Labels.preStop] : undefined;
  return { type: 'remove', podId, container, reason, id: c.id, running, graceSeconds, ...(preStop === undefined ? {} : { preStop }) };
}

/** A running container's preStop hook, as its label keeps it (see `Labels.preStop`). */
export function preStopOf(c: ContainerSummary): { preStop?: string } {
  const preStop = c.labels[Labels.preStop];
  return preStop === undefined ? {} : { preStop };
}

/** Stops `c` if it runs (after its preStop hook) and keeps it, for the restart policy or for inspection; `detail` says why. */
export function killing(podId: string, c: ContainerSummary, reason: PlanReason, graceSeconds: number, detail: string): PlanAction {
  return { type: 'kill', podId, container: c.labels[Labels.containerName] ?? '', reason, id: c.id, graceSeconds, detail, ...preStopOf(c) };
}
