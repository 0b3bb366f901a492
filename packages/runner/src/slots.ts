/** What the executor takes a slot from before it pulls, creates and starts a pod's containers. */
export interface StartSlots {
  /** Waits for a slot; call the returned function once to give it back. */
  acquire(): Promise<() => void>;
}

/**
 * A counting semaphore: at most `size` holders at once, the others wait in arrival order.
 */
export class Slots implements StartSlots {
  private held = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`concurrency must be a positive integer, got ${size}`);
  }

  /** Waits for a slot; call the returned function once to give it back. */
  async acquire(): Promise<() => void> {
    if (this.held >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.held += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so no newcomer can take it in between.
      if (next === undefined) this.held -= 1;
      else next();
    };
  }
}
