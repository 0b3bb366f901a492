/** One change as the API server's watch sends it: a JSON object a line. */
export interface WatchEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: T;
}

/** What a watcher may have waiting before it is dropped: a slow reader must not grow the agent. */
export const MAX_QUEUED_CHANGES = 1_000;

const encoder = new TextEncoder();

/**
 * A watch as the API server streams one (`?watch=1`): the current objects as `ADDED` first, then
 * every change `subscribe` hears, a JSON line each, until `signal` aborts. Changes wait in a queue
 * while the client reads slowly (the answer writes a line once the socket took the last); a
 * watcher that lets more than `maxQueued` pile up is cut off (its connection ends mid-stream, so it
 * knows to list and watch again) rather than let the agent's memory grow.
 */
export async function* watchStream<T>(
  initial: readonly WatchEvent<T>[],
  subscribe: (push: (change: WatchEvent<T>) => void) => () => void,
  signal: AbortSignal,
  maxQueued = MAX_QUEUED_CHANGES,
): AsyncGenerator<Uint8Array> {
  const queue: WatchEvent<T>[] = [...initial];
  let wake: (() => void) | undefined;
  let overflowed = false;
  const unsubscribe = subscribe((change) => {
    if (queue.length >= maxQueued) overflowed = true;
    else queue.push(change);
    wake?.();
  });
  const aborted = () => wake?.();
  signal.addEventListener('abort', aborted);
  try {
    for (;;) {
      if (overflowed) throw new Error(`the watcher fell ${maxQueued} changes behind: dropped`);
      const next = queue.shift();
      if (next !== undefined) {
        yield encoder.encode(`${JSON.stringify(next)}\n`);
        continue;
      }
      if (signal.aborted) return;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    unsubscribe();
    signal.removeEventListener('abort', aborted);
  }
}
