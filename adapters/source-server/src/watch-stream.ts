import type { WatchEvent } from '@kubelet-ts/core';

/** What a watcher may have waiting before it is dropped: a slow reader must not grow the agent. */
export const MAX_QUEUED_CHANGES = 1_000;

const encoder = new TextEncoder();

/**
 * Each batch's lines, by the batch: a batch pushed to every watcher (`PodWatchHub` pushes one
 * array, a render's changes, to all) is serialised and encoded once, and the same bytes are
 * written to each socket, in one write.
 */
const encoded = new WeakMap<readonly WatchEvent<unknown>[], Uint8Array>();

/** The JSON lines of `changes`, made at most once for a given array. */
function linesOf(changes: readonly WatchEvent<unknown>[]): Uint8Array {
  let lines = encoded.get(changes);
  if (lines === undefined) {
    let text = '';
    for (const change of changes) text += `${JSON.stringify(change)}\n`;
    lines = encoder.encode(text);
    encoded.set(changes, lines);
  }
  return lines;
}

/**
 * A watch as the API server streams one (`?watch=1`): the current objects as `ADDED` first, then
 * every change `subscribe` hears, a JSON line each, until `signal` aborts. `subscribe` hears
 * changes in batches (what happened together: a batch is written as one chunk, and the same array
 * given to many watchers is encoded once). Changes wait in a queue while the client reads slowly
 * (the answer writes a batch once the socket took the last); a watcher that lets more than
 * `maxQueued` changes pile up is cut off (its connection ends mid-stream, so it knows to list and
 * watch again) rather than let the agent's memory grow.
 */
export async function* watchStream<T>(
  initial: readonly WatchEvent<T>[],
  subscribe: (push: (changes: readonly WatchEvent<T>[]) => void) => () => void,
  signal: AbortSignal,
  maxQueued = MAX_QUEUED_CHANGES,
): AsyncGenerator<Uint8Array> {
  const queue: (readonly WatchEvent<T>[])[] = initial.length === 0 ? [] : [initial];
  let queued = initial.length;
  let wake: (() => void) | undefined;
  let overflowed = false;
  const unsubscribe = subscribe((changes) => {
    if (changes.length === 0) return;
    // A batch met by an empty queue is taken whole, however large: the watcher is not behind.
    if (queued > 0 && queued + changes.length > maxQueued) overflowed = true;
    else {
      queue.push(changes);
      queued += changes.length;
    }
    wake?.();
  });
  const aborted = () => wake?.();
  signal.addEventListener('abort', aborted);
  try {
    for (;;) {
      if (overflowed) throw new Error(`the watcher fell ${maxQueued} changes behind: dropped`);
      const next = queue.shift();
      if (next !== undefined) {
        queued -= next.length;
        yield linesOf(next);
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
