import { KubeletError, wrapRuntime, type Clock, type ContainerRuntime, type RuntimeOperation } from '@kubelet-ts/core';

/** How long the agent waits for the engine's answer to each kind of call. */
export interface RuntimeDeadlines {
  /** Every call but those below. Default 2 min (the kubelet's CRI default). */
  readonly callMs: number;
  /** A pull. Default 15 min. */
  readonly pullMs: number;
  /** Added to a stop's grace period and to an exec's own timeout, which the engine itself waits out. Default 1 min. */
  readonly graceMarginMs: number;
}

export const DEFAULT_RUNTIME_DEADLINES: RuntimeDeadlines = { callMs: 120_000, pullMs: 15 * 60_000, graceMarginMs: 60_000 };

/**
 * `runtime` with a deadline on every call (issue 27: with a frozen Docker engine every call hung,
 * holding a socket each). A call past its deadline rejects with `Timeout`, naming the call and the
 * time; the engine may still carry it out, and its late answer is dropped (the next look at the
 * pod sees what it did). Keeps every capability of `runtime`.
 */
export function withDeadlines(
  runtime: ContainerRuntime,
  clock: Clock,
  deadlines: RuntimeDeadlines = DEFAULT_RUNTIME_DEADLINES,
): ContainerRuntime {
  const limitOf = (operation: RuntimeOperation, args: readonly unknown[]): number => {
    if (operation === 'pull') return deadlines.pullMs;
    if (operation === 'stop') return Number(args[1] ?? 0) * 1000 + deadlines.graceMarginMs;
    if (operation === 'exec') return Number(args[2] ?? 0) + deadlines.graceMarginMs;
    return deadlines.callMs;
  };
  return wrapRuntime(runtime, {
    around: (operation, args, proceed) => {
      const limitMs = limitOf(operation, args);
      return new Promise((resolve, reject) => {
        const timer = clock.setTimeout(() => {
          reject(
            new KubeletError(
              'Timeout',
              `${operation} got no answer from the ${runtime.name} runtime within ${limitMs / 1000} s; the engine may be frozen or overloaded`,
              { adapter: runtime.name },
            ),
          );
        }, limitMs);
        proceed().then(
          (value) => {
            clock.clearTimeout(timer);
            resolve(value);
          },
          (error: unknown) => {
            clock.clearTimeout(timer);
            reject(error);
          },
        );
      });
    },
  });
}
