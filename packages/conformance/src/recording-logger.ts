import type { Logger } from '@kubelet-ts/core';

/** One line `RecordingLogger` kept: its level, its fields and its message. */
export interface LogEntry {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

/** A Logger that keeps every entry (its fields copied), so a test can tell what was logged, at which level, how often. */
export class RecordingLogger implements Logger {
  readonly entries: LogEntry[] = [];

  debug(fields: object, message: string): void {
    this.entries.push({ level: 'debug', fields: { ...fields }, message });
  }

  info(fields: object, message: string): void {
    this.entries.push({ level: 'info', fields: { ...fields }, message });
  }

  warn(fields: object, message: string): void {
    this.entries.push({ level: 'warn', fields: { ...fields }, message });
  }

  error(fields: object, message: string): void {
    this.entries.push({ level: 'error', fields: { ...fields }, message });
  }

  child(): Logger {
    return this;
  }

  /** The entries at `level`. */
  at(level: LogEntry['level']): LogEntry[] {
    return this.entries.filter((e) => e.level === level);
  }

  /** The entries whose message contains `text`. */
  find(text: string): LogEntry[] {
    return this.entries.filter((e) => e.message.includes(text));
  }
}
