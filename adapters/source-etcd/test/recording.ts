export { RecordingSink } from '@kubelet-ts/conformance';
import { systemClock, type Clock } from '@kubelet-ts/core';

import type { RecordingLogger } from '@kubelet-ts/conformance';
export { RecordingLogger, type LogEntry } from '@kubelet-ts/conformance';

/** The system clock, noting every delay asked of it: what waits on the clock an adapter was given. */
export function recordingClock(): { clock: Clock; delays: number[] } {
  const delays: number[] = [];
  const clock: Clock = {
    ...systemClock,
    setTimeout: (callback, ms) => {
      delays.push(ms);
      return systemClock.setTimeout(callback, ms);
    },
  };
  return { clock, delays };
}

/** Waits until `check` holds. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The revision from which the source's latest watch started, from its debug log. */
export const lastWatchRevision = (logger: RecordingLogger): bigint =>
  BigInt(String(logger.find('watching').at(-1)?.fields.fromRevision ?? '0'));
