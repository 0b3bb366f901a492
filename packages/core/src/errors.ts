/**
 * Behavioural error codes. Callers branch on `code`, never on message text.
 *
 * - `InvalidManifest`: input that can never succeed as given; carries field errors.
 * - `NotFound`: the named container, image or key does not exist.
 * - `Conflict`: the operation clashes with current state (name taken, container running).
 * - `Unavailable`: the backend could not be reached; retrying later may succeed.
 * - `Timeout`: the backend did not answer in time; retrying later may succeed.
 * - `Unsupported`: the runtime has not got this optional power (container figures, say).
 * - `Internal`: anything else (a bug, or a backend answer we do not understand).
 */
export type ErrorCode = 'InvalidManifest' | 'NotFound' | 'Conflict' | 'Unavailable' | 'Timeout' | 'Unsupported' | 'Internal';

/** One problem in a manifest, located by its field path (`containers[1].ports[0].hostPort`). */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

/** What a `KubeletError` carries beside its code and message: the adapter that raised it, its cause, its field errors. */
export interface KubeletErrorOptions {
  /** Which adapter or component raised it (`docker`, `file`, `memory`, …). */
  readonly adapter?: string | undefined;
  readonly cause?: unknown;
  readonly fieldErrors?: readonly FieldError[];
}

/**
 * The one error every part of the agent raises and branches on: a behavioural `code`, the adapter
 * that raised it, the field errors of a refused manifest, and the original error as `cause`.
 */
export class KubeletError extends Error {
  override readonly name = 'KubeletError';
  readonly code: ErrorCode;
  readonly adapter: string | undefined;
  readonly fieldErrors: readonly FieldError[];

  constructor(code: ErrorCode, message: string, options: KubeletErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.adapter = options.adapter;
    this.fieldErrors = options.fieldErrors ?? [];
  }
}

/** Whether `error` is a `KubeletError` (of `code`, when given): how callers branch, never on message text. */
export function isKubeletError(error: unknown, code?: ErrorCode): error is KubeletError {
  return error instanceof KubeletError && (code === undefined || error.code === code);
}

/**
 * What `call` gives, or `undefined` when it failed with `NotFound`: for a call whose `NotFound`
 * means it is done already (a container stopped or removed meanwhile, an image gone).
 */
export async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (isKubeletError(error, 'NotFound')) return undefined;
    throw error;
  }
}

/** Formats field errors the way every surface prints them: `path: message; path: message`. */
export function formatFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join('; ');
}

/** Wraps anything thrown into a KubeletError, keeping it as the cause. */
export function toKubeletError(error: unknown, adapter?: string): KubeletError {
  if (error instanceof KubeletError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new KubeletError('Internal', message, { adapter, cause: error });
}
