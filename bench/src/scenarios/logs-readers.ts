import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { ms } from '../stats.js';

/**
 * The wall clock in ms, to a fraction of one: the clock a container's `$EPOCHREALTIME` (busybox
 * sh) and the engines' log stamps read (CLOCK_REALTIME, one kernel), so print and receipt compare.
 */
export const wallMs = (): number => performance.timeOrigin + performance.now();

/**
 * Runs `command` to its end and times it from spawn to exit. Its output goes to /dev/null when
 * `keep` is false (the tool reads and writes all of it, nobody reads it after), or is returned.
 */
export function timedRun(command: string, args: readonly string[], keep = false): Promise<{ ms: number; stdout: string }> {
  const devNull = keep ? undefined : openSync('/dev/null', 'w');
  const t = process.hrtime.bigint();
  const child = spawn(command, args, { stdio: ['ignore', devNull ?? 'pipe', 'pipe'] });
  if (devNull !== undefined) closeSync(devNull);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const took = ms(t);
      if (code === 0) resolve({ ms: took, stdout });
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${stderr.trim()}`));
    });
  });
}

/**
 * One whole read of `url` by curl (a client that is not ours, in a process of its own, as a
 * reader of the agent is), the body to /dev/null: the time and the bytes it took.
 */
export async function curlRead(url: string, unixSocket?: string): Promise<{ ms: number; bytes: number }> {
  const socket = unixSocket === undefined ? [] : ['--unix-socket', unixSocket];
  const { ms: took, stdout } = await timedRun(
    'curl',
    ['-sS', '-o', '/dev/null', '-w', '%{http_code} %{size_download}', ...socket, url],
    true,
  );
  const [status, bytes] = stdout.trim().split(' ').map(Number);
  if (status !== 200) throw new Error(`GET ${url}: ${status}`);
  return { ms: took, bytes: bytes! };
}

/** A body being read as it comes: its lines (or bytes), until `close()` or the server ends it. */
export interface OpenRead {
  /** Bytes taken off the socket so far (for a paused read: what the socket buffers let in). */
  bytes(): number;
  /** Resolves once the answer ended or the read was closed. */
  readonly done: Promise<void>;
  close(): void;
}

export interface OpenReadOptions {
  /** Each whole line of the body, without its `\n`, with the wall time its chunk arrived at. */
  readonly onLine?: (line: string, at: number) => void;
  /** Read nothing after the headers: the socket's buffers fill and the server is held back. */
  readonly paused?: boolean;
}

/** `GET url` on a connection of its own, resolved once the answer's headers (200) are in. */
export function openRead(url: string, options: OpenReadOptions = {}): Promise<OpenRead> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body = (body + chunk).slice(0, 500)));
        res.on('end', () => reject(new Error(`GET ${url}: ${res.statusCode} ${body}`)));
        return;
      }
      let bytes = 0;
      let partial = '';
      const done = new Promise<void>((end) => {
        res.on('end', end);
        res.on('close', end);
        res.on('error', () => end());
      });
      if (options.paused === true) res.pause();
      else
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (options.onLine === undefined) return;
          const at = wallMs();
          const parts = (partial + chunk.toString('latin1')).split('\n');
          partial = parts.pop() ?? '';
          for (const line of parts) options.onLine(line, at);
        });
      resolve({
        bytes: () => (options.paused === true ? res.socket.bytesRead : bytes),
        done,
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

/** A command's stdout read line by line (the engine's own follower, `docker logs -f`, `tail -f`), until `close()`. */
export function openProcess(command: string, args: readonly string[], onLine: (line: string, at: number) => void): OpenRead {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let bytes = 0;
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    const at = wallMs();
    const parts = (partial + chunk.toString('latin1')).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) onLine(line, at);
  });
  const done = new Promise<void>((resolve) => child.on('close', () => resolve()));
  child.on('error', (error) => process.stderr.write(`bench: ${command}: ${error.message}\n`));
  return {
    bytes: () => bytes,
    done,
    close: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
