import type { Logger } from '@kubelet-ts/core';
import { pino, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

export interface LoggerOptions {
  readonly level?: string;
  /** Human-readable lines instead of JSON. Default: when stdout is a terminal. */
  readonly pretty?: boolean;
  readonly destination?: DestinationStream;
}

/** JSON lines for machines; coloured, readable lines when a person is watching the terminal. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const usePretty = options.pretty ?? process.stdout.isTTY === true;
  const destination =
    options.destination ??
    (usePretty ? pretty({ colorize: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' }) : pino.destination({ sync: true }));
  return pino({ level: options.level ?? 'info', base: { name: 'kubelet-ts' } }, destination);
}
