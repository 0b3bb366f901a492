/**
 * Says something only when it differs from what was said last, so that a periodic re-read (a
 * re-listed directory, a re-read etcd key, another sync pass) repeats nothing it already said.
 * The first text after construction or `reset` is always new. Sources say their problems through it
 * (`ManifestIntake` in `@kubelet-ts/manifest`, one per document), and `DeliveredSet` their sets.
 */
export class ChangeReporter {
  private last: string | undefined;

  /** True, and remembers `text`, when it differs from the last text given here since `reset`. */
  changed(text: string): boolean {
    if (text === this.last) return false;
    this.last = text;
    return true;
  }

  /**
   * Hands every one of `errors` to `emit` when their messages, together, differ from the last
   * report, and none when they repeat it: a standing problem is said once, and said again in full
   * when anything about it changes. An empty list says nothing, and clears what was said.
   */
  report<E extends Error>(errors: readonly E[], emit: (error: E) => void): void {
    if (!this.changed(errors.map((e) => e.message).join('\n'))) return;
    for (const e of errors) emit(e);
  }

  /** Forgets what was said (a restarted source says everything afresh). */
  reset(): void {
    this.last = undefined;
  }
}
