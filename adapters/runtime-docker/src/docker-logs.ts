import {
  KubeletError,
  cutAtLimit,
  logText,
  parseLogTime,
  type ContainerLogSource,
  type LogLine,
  type LogReadOptions,
  type LogStream,
  type LogTextOptions,
} from '@kubelet-ts/core';
import type { DockerApi } from './docker-api.js';
import { ADAPTER, dockerDetail, translate } from './errors.js';

/** The multiplexed stream's header: [stream, 0, 0, 0, size (uint32, big-endian)], then `size` bytes. */
const HEADER = 8;
const STREAMS: Readonly<Record<number, LogStream>> = { 1: 'stdout', 2: 'stderr' };
const NEWLINE = 0x0a;
const SPACE = 0x20;

/** The logs power of a Docker or Podman engine (`capabilities.logs`): its own log of each container, as lines or as text. */
export class DockerLogSource implements ContainerLogSource {
  constructor(
    private readonly docker: DockerApi,
    private readonly endpoint: string,
  ) {}

  /** What the container printed, from the engine's own log (`docker logs`; see `dockerLogs`). */
  logs(id: string, options: LogReadOptions = {}): Promise<AsyncIterable<LogLine>> {
    return dockerLogs(this.docker, this.endpoint, id, options);
  }

  /** The same as text, the engine's payloads handed on by the chunk when no times are asked (see `dockerLogText`). */
  text(id: string, options: LogTextOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    return dockerLogText(this.docker, this.endpoint, id, options);
  }
}

/**
 * The engine's own log of container `id` (`GET /containers/{id}/logs`), as the logs contract reads
 * it: asked for with timestamps (each message comes as `<RFC 3339 nano> <text>`), the 8-byte frame
 * headers of the multiplexed stream taken apart (stdout and stderr as the engine interleaved them),
 * one line per message (a message the engine split, over 16 KiB, comes in parts without `\n`).
 * `tail`, `follow` and `since` go to the engine (`since` in whole seconds, and each line's own
 * time checked too); `limitBytes` cuts here and closes the request. The request is made at the
 * first `next()` and read as it is consumed: a reader that stops reading stops the engine's stream
 * (TCP back-pressure), and one that stops, aborts or breaks out closes it.
 */
export async function dockerLogs(
  docker: DockerApi,
  endpoint: string,
  id: string,
  options: LogReadOptions,
): Promise<AsyncIterable<LogLine>> {
  const { tty } = await known(docker, endpoint, id);
  return read(docker, endpoint, id, options, tty);
}

/**
 * The same read as text (`ContainerLogSource.text`). Without `timestamps` and `sinceMs`, the
 * engine's stream is asked without times (as `docker logs` asks it) and its payloads are handed on
 * by the chunk, the frame headers cut out in place (`payloads`); otherwise the lines are rendered.
 */
export async function dockerLogText(
  docker: DockerApi,
  endpoint: string,
  id: string,
  options: LogTextOptions,
): Promise<AsyncIterable<Uint8Array>> {
  const { tty } = await known(docker, endpoint, id);
  if (options.timestamps === true || options.sinceMs !== undefined) {
    const { timestamps: _timestamps, ...lines } = options;
    return logText(read(docker, endpoint, id, lines, tty), options);
  }
  return cutAtLimit(payloads(docker, endpoint, id, options, tty), options.limitBytes);
}

/**
 * Known before any stream is opened: an unknown container is NotFound, as the contract says. And
 * whether it has a terminal (v1 `tty`): the engine then sends its output as it is, not multiplexed.
 */
async function known(docker: DockerApi, endpoint: string, id: string): Promise<{ tty: boolean }> {
  const info = await docker
    .getContainer(id)
    .inspect()
    .catch((error: unknown) => {
      throw translate(error, `logs of ${id}`, endpoint);
    });
  return { tty: (info as { Config?: { Tty?: boolean } }).Config?.Tty === true };
}

/**
 * The engine's stream for a read, opened at the first `next()`; undefined when the read was
 * aborted before the engine answered (Podman sends no headers until a line comes): a plain end.
 */
async function opened(
  docker: DockerApi,
  endpoint: string,
  id: string,
  options: LogReadOptions,
  timestamps: boolean,
): Promise<NodeJS.ReadableStream | undefined> {
  // A function, so that each look reads the signal anew (it aborts while the engine is asked).
  const aborted = () => options.signal?.aborted === true;
  if (aborted()) return undefined;
  try {
    return await open(docker, endpoint, id, options, timestamps);
  } catch (error) {
    if (aborted()) return undefined;
    throw error;
  }
}

/** The engine's stream broke in the middle of a read. */
function broken(id: string, error: unknown): KubeletError {
  return new KubeletError('Unavailable', `logs of ${id}: the engine's stream broke: ${dockerDetail(error)}`, {
    adapter: ADAPTER,
    cause: error,
  });
}

/**
 * The payloads of stdout and stderr frames, each chunk of the engine's stream with its frame headers
 * cut out in place (a frame may straddle chunks: what is left of it, or of its header, is carried
 * over) and handed on whole (`limitBytes` is `dockerLogText`'s to cut).
 */
async function* payloads(
  docker: DockerApi,
  endpoint: string,
  id: string,
  options: LogReadOptions,
  tty: boolean,
): AsyncGenerator<Uint8Array> {
  const { signal } = options;
  const stream = await opened(docker, endpoint, id, options, false);
  if (stream === undefined) return;
  try {
    // A terminal's output comes as it is: no frames to cut.
    for await (const chunk of tty ? (stream as AsyncIterable<Buffer>) : framePayloads(stream as AsyncIterable<Buffer>)) {
      yield chunk;
      if (signal?.aborted === true) return;
    }
  } catch (error) {
    if (signal?.aborted === true) return;
    throw broken(id, error);
  } finally {
    (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  }
}

/** Each chunk of a multiplexed stream with its frame headers (and any stdin frame) cut out in place; empty ones left out. */
async function* framePayloads(stream: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const header = Buffer.alloc(HEADER);
  let headerBytes = 0;
  // The payload bytes of the current frame still to come, and whether they are handed on.
  let remaining = 0;
  let kept = false;
  for await (const chunk of stream) {
    let size = 0;
    let at = 0;
    while (at < chunk.length) {
      if (remaining > 0) {
        const n = Math.min(remaining, chunk.length - at);
        if (kept) {
          chunk.copyWithin(size, at, at + n);
          size += n;
        }
        at += n;
        remaining -= n;
        continue;
      }
      if (headerBytes === 0 && chunk.length - at >= HEADER) {
        // The whole header in this chunk (all but one frame a chunk at most): read where it is.
        remaining = chunk.readUInt32BE(at + 4);
        kept = chunk[at] === 1 || chunk[at] === 2; // stdin (0): never asked for
        at += HEADER;
        continue;
      }
      const n = Math.min(HEADER - headerBytes, chunk.length - at);
      chunk.copy(header, headerBytes, at, at + n);
      headerBytes += n;
      at += n;
      if (headerBytes < HEADER) break;
      headerBytes = 0;
      remaining = header.readUInt32BE(4);
      kept = header[0] === 1 || header[0] === 2;
    }
    if (size > 0) yield chunk.subarray(0, size);
  }
}

async function* read(docker: DockerApi, endpoint: string, id: string, options: LogReadOptions, tty: boolean): AsyncGenerator<LogLine> {
  const { signal, sinceMs } = options;
  // A function, so that each look reads the signal anew (it aborts while the read waits).
  const aborted = () => signal?.aborted === true;
  const stream = await opened(docker, endpoint, id, options, true);
  if (stream === undefined) return;
  let left = options.limitBytes ?? Number.POSITIVE_INFINITY;
  try {
    for await (const { kind, payload } of (tty ? terminalLines : frames)(stream as AsyncIterable<Buffer>)) {
      for (const line of messages(payload, kind)) {
        if (sinceMs !== undefined && line.time < sinceMs) continue;
        const content = line.content.length > left ? line.content.subarray(0, left) : line.content;
        left -= content.length;
        yield content === line.content ? line : { ...line, content };
        if (left <= 0 || aborted()) return;
      }
    }
  } catch (error) {
    if (aborted()) return;
    throw broken(id, error);
  } finally {
    (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  }
}

/** The multiplexed stream's stdout and stderr messages, each whole (a frame may straddle chunks). */
async function* frames(stream: AsyncIterable<Buffer>): AsyncGenerator<{ kind: LogStream; payload: Buffer }> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of stream) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= HEADER) {
      const size = pending.readUInt32BE(4);
      if (pending.length < HEADER + size) break;
      const kind = STREAMS[pending[0]!];
      const payload = pending.subarray(HEADER, HEADER + size);
      pending = pending.subarray(HEADER + size);
      if (kind !== undefined) yield { kind, payload }; // stdin: never asked for
    }
  }
}

/**
 * A terminal's output (a container with `Tty`, whose log the engine sends as it is): stdout, in
 * whole lines each after its time (a line a chunk cut is carried to the next), the last one as it
 * ends, without its `\n` if it had none.
 */
async function* terminalLines(stream: AsyncIterable<Buffer>): AsyncGenerator<{ kind: LogStream; payload: Buffer }> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of stream) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    const end = pending.lastIndexOf(NEWLINE) + 1;
    if (end === 0) continue;
    yield { kind: 'stdout', payload: pending.subarray(0, end) };
    pending = pending.subarray(end);
  }
  if (pending.length > 0) yield { kind: 'stdout', payload: pending };
}

/** The engine's stream, never buffered whole (dockerode buffers a read without `follow`, so it is dialled as a stream). */
function open(
  docker: DockerApi,
  endpoint: string,
  id: string,
  options: LogReadOptions,
  timestamps: boolean,
): Promise<NodeJS.ReadableStream> {
  const query: Record<string, string | number | boolean> = {
    stdout: true,
    stderr: true,
    timestamps,
    follow: options.follow === true,
    tail: options.tailLines === undefined ? 'all' : Math.max(0, Math.floor(options.tailLines)),
  };
  if (options.sinceMs !== undefined) query['since'] = Math.max(0, Math.floor(options.sinceMs / 1000));
  return new Promise((resolve, reject) => {
    docker.modem.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/logs?`,
        method: 'GET',
        isStream: true,
        ...(options.signal === undefined ? {} : { abortSignal: options.signal }),
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error', 501: 'not implemented' },
        options: query,
      },
      (error, stream) => {
        if (error === null && stream !== undefined) return resolve(stream as NodeJS.ReadableStream);
        const detail = dockerDetail(error);
        // A log driver the engine cannot read back (`none`, `syslog` without dual logging).
        if (/does not support reading|logging driver/i.test(detail))
          return reject(
            new KubeletError('Unsupported', `logs of ${id}: ${detail} (run it with the json-file or local log driver to read it here)`, {
              adapter: ADAPTER,
              cause: error,
            }),
          );
        reject(translate(error, `logs of ${id}`, endpoint));
      },
    );
  });
}

/** The lines of one message: `<time> <text>`, a part of a line when it does not end in `\n`. */
function* messages(payload: Buffer, stream: LogStream): Generator<LogLine> {
  let start = 0;
  let time = { time: 0 } as Pick<LogLine, 'time' | 'nanos'>;
  while (start < payload.length) {
    const newline = payload.indexOf(NEWLINE, start);
    const end = newline === -1 ? payload.length : newline + 1;
    const space = payload.indexOf(SPACE, start);
    const stamped = space !== -1 && space < end ? parseLogTime(payload.toString('latin1', start, space)) : undefined;
    if (stamped !== undefined) time = stamped;
    const from = stamped === undefined ? start : space + 1;
    yield { stream, ...time, content: new Uint8Array(payload.subarray(from, end)) };
    start = end;
  }
}
