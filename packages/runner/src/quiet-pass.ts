import type { ContainerSummary, SandboxSummary } from '@kubelet-ts/core';
import type { DesiredState } from './mux.js';

interface QuietInputs {
  readonly desired: DesiredState;
  readonly listed: readonly ContainerSummary[];
  readonly sandboxes: readonly SandboxSummary[];
  readonly allowRemovals: boolean;
}

/**
 * Recognises a pass whose inputs are those of the last pass that found nothing to do: the same
 * desired state, the very same container and sandbox records (by identity), removals allowed alike, no pod
 * busy, no back-off or probe result pending. Its plan would be empty again, so planning is skipped.
 *
 * Only runtimes that hand out unchanged records as the same objects benefit (the in-memory one:
 * the steady state then costs one list and one pointer comparison per container; the bench's
 * "no-op pass, 10,000 pods" row measures it, 2.2 ms against 32 ms planned in full). Any runtime
 * that builds new records per list (Docker) never matches, and is planned in full as before.
 */
export class QuietPass {
  private last: (QuietInputs & { readonly held: number }) | undefined;

  /** The `held` count of the remembered quiet pass when `inputs` are its inputs, else undefined. */
  matches(inputs: QuietInputs): number | undefined {
    const last = this.last;
    if (last === undefined || last.desired !== inputs.desired || last.allowRemovals !== inputs.allowRemovals) return undefined;
    return sameRecords(last.listed, inputs.listed) && sameRecords(last.sandboxes, inputs.sandboxes) ? last.held : undefined;
  }

  /** Remembers the inputs when the pass found nothing to do; forgets them otherwise. */
  record(inputs: QuietInputs, quiet: boolean, held: number): void {
    this.last = quiet ? { ...inputs, held } : undefined;
  }
}

function sameRecords<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
