export { RecordingSink } from '@kubelet-ts/conformance';
import { systemClock, type Clock, type Logger } from '@kubelet-ts/core';

export interface LogEntry {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

/** A logger that keeps every entry, so that a test can check what was logged, and how often. */
export class RecordingLogger implements Logger {
  readonly entries: LogEntry[] = [];
  debug(fields: object, message: string) {
    this.entries.push({ level: 'debug', fields: fields as Record<string, unknown>, message });
  }
  info(fields: object, message: string) {
    this.entries.push({ level: 'info', fields: fields as Record<string, unknown>, message });
  }
  warn(fields: object, message: string) {
    this.entries.push({ level: 'warn', fields: fields as Record<string, unknown>, message });
  }
  error(fields: object, message: string) {
    this.entries.push({ level: 'error', fields: fields as Record<string, unknown>, message });
  }
  child(): Logger {
    return this;
  }
  /** Entries whose message contains `text`. */
  find(text: string): LogEntry[] {
    return this.entries.filter((e) => e.message.includes(text));
  }
}

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
