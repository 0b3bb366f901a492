/**
 * Structured logging, shaped so that a pino logger fits as it is: fields first, then the message.
 * Log an error once, where it is handled.
 */
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** A logger that drops everything: the default wherever a logger is optional. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
