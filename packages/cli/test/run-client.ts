import { PassThrough } from 'node:stream';
import type { GetIo } from '../src/get-context.js';

/** What a client command printed, and its exit code. */
export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** How a test runs a command: its environment, the time, a terminal or a pipe, what stops a watch. */
export interface RunOptions {
  readonly env?: Record<string, string>;
  /** Now, for ages; `undefined` for the clock's. */
  readonly now?: number | undefined;
  readonly tty?: boolean;
  readonly stopped?: Promise<unknown>;
  /** Sees the output as it comes (a watch's rows). */
  readonly onOutput?: (stdout: string) => void;
}

/** A client command's main (`getMain`, `describeMain`) in this process, its output kept. */
export async function runClient(
  main: (argv: readonly string[], io: GetIo) => Promise<number>,
  args: readonly string[],
  options: RunOptions = {},
): Promise<Ran> {
  const stdout = Object.assign(new PassThrough(), options.tty === true ? { isTTY: true } : {});
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => {
    out += d.toString();
    options.onOutput?.(out);
  });
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const now = options.now;
  const code = await main(args, {
    stdout,
    stderr,
    env: options.env ?? {},
    ...(now === undefined ? {} : { now: () => now }),
    ...(options.stopped === undefined ? {} : { stopped: () => options.stopped! }),
  });
  return { code, stdout: out, stderr: err };
}

/** Waits until `check` holds, trying every 10 ms for up to 5 s. */
export async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
