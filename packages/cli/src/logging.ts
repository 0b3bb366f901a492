import type { Logger } from '@kubelet-ts/core';
import { pino, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

/** What `createLogger` takes: the level, the line format and where the lines go. */
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

/** What a warning of Node's means for this agent, by its code, when there is more to say than Node does. */
const WARNING_ADVICE: Readonly<Record<string, string>> = {
  DEP0123:
    'etcd (or a URL) is reached by IP address over TLS, and TLS cannot name an IP address as the server (SNI); harmless: the certificate is still checked against the address',
};

/**
 * Node prints its process warnings (deprecations, DEP0123 when the etcd client connects by IP over
 * TLS) as plain text on stderr, which breaks a log of JSON lines: they go through the agent's
 * logger instead, each at warn level with its name and code. Replaces Node's own printer.
 */
export function routeProcessWarnings(logger: Logger): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    const advice = warning.code === undefined ? undefined : WARNING_ADVICE[warning.code];
    logger.warn(
      { warning: warning.name, ...(warning.code === undefined ? {} : { code: warning.code }) },
      advice === undefined ? `Node.js: ${warning.message}` : `Node.js: ${warning.message} (${advice})`,
    );
  });
}
