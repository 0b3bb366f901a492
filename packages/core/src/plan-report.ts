import type { BackOff, Plan, PlanReason } from './planner.js';

/** One step a pass would take, as an operator reads it. */
export interface PlannedStep {
  readonly podId: string;
  readonly container: string;
  readonly action: 'create' | 'start' | 'stop' | 'remove' | 'run-sandbox' | 'remove-sandbox';
  readonly reason: PlanReason;
  /** The existing container acted on (start, stop, remove); a stop alone is the kill of an unhealthy container. */
  readonly id?: string;
  /** The image a create would run. */
  readonly image?: string;
}

/** What a pass would do now, without doing it (`kubelet-ts plan`, `GET /plan`). */
export interface PlanReport {
  /** True when a pass would do nothing. */
  readonly inSync: boolean;
  readonly steps: readonly PlannedStep[];
  /** Removals withheld until every source has been seen. */
  readonly held: number;
  readonly backOffs: readonly BackOff[];
  /** Sources that have not delivered yet (their manifests are not in the plan). */
  readonly unseenSources: readonly string[];
}

/** Turns a plan into steps: a running container that goes is a stop, then a remove. */
export function reportPlan(plan: Plan, unseenSources: readonly string[] = []): PlanReport {
  const steps: PlannedStep[] = [];
  for (const pod of plan.pods) {
    for (const a of pod.actions) {
      const base = { podId: a.podId, container: a.container, reason: a.reason };
      if (a.type === 'create') steps.push({ ...base, action: 'create', image: a.spec.image });
      else if (a.type === 'start') steps.push({ ...base, action: 'start', id: a.id });
      else if (a.type === 'kill') steps.push({ ...base, action: 'stop', id: a.id });
      else if (a.type === 'run-sandbox') steps.push({ ...base, action: 'run-sandbox' });
      else if (a.type === 'remove-sandbox') steps.push({ ...base, action: 'remove-sandbox', id: a.id });
      else {
        if (a.running) steps.push({ ...base, action: 'stop', id: a.id });
        steps.push({ ...base, action: 'remove', id: a.id });
      }
    }
  }
  return { inSync: steps.length === 0, steps, held: plan.held, backOffs: plan.backOffs, unseenSources };
}
