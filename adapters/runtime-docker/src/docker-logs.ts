import { KubeletError, parseLogTime, type LogLine, type LogReadOptions, type LogStream } from '@kubelet-ts/core';
import type { DockerApi } from './docker-api.js';
import { ADAPTER, dockerDetail, translate } from './errors.js';

/** The multiplexed stream's header: [stream, 0, 0, 0, size (uint32, big-endian)], then `size` bytes. */
const HEADER = 8;
const STREAMS: Readonly<Record<number, LogStream>> = { 1: 'stdout', 2: 'stderr' };
const NEWLINE = 0x0a;
const SPACE = 0x20;

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
  // Known before any stream is opened: an unknown container is NotFound, as the contract says.
  await docker
    .getContainer(id)
    .inspect()
    .catch((error: unknown) => {
      throw translate(error, `logs of ${id}`, endpoint);
    });
  return read(docker, endpoint, id, options);
}

async function* read(docker: DockerApi, endpoint: string, id: string, options: LogReadOptions): AsyncGenerator<LogLine> {
  const { signal, sinceMs } = options;
  // A function, so that each look reads the signal anew (it aborts while the read waits).
  const aborted = () => signal?.aborted === true;
  if (aborted()) return;
  let stream: NodeJS.ReadableStream;
  try {
    stream = await open(docker, endpoint, id, options);
  } catch (error) {
    // Aborted before the engine answered (Podman sends no headers until a line comes): a plain end.
    if (aborted()) return;
    throw error;
  }
  let left = options.limitBytes ?? Number.POSITIVE_INFINITY;
  let pending: Buffer = Buffer.alloc(0);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= HEADER) {
        const size = pending.readUInt32BE(4);
        if (pending.length < HEADER + size) break;
        const kind = STREAMS[pending[0]!];
        const payload = pending.subarray(HEADER, HEADER + size);
        pending = pending.subarray(HEADER + size);
        if (kind === undefined) continue; // stdin: never asked for
        for (const line of messages(payload, kind)) {
          if (sinceMs !== undefined && line.time < sinceMs) continue;
          const content = line.content.length > left ? line.content.subarray(0, left) : line.content;
          left -= content.length;
          yield content === line.content ? line : { ...line, content };
          if (left <= 0 || aborted()) return;
        }
      }
    }
  } catch (error) {
    if (aborted()) return;
    throw new KubeletError('Unavailable', `logs of ${id}: the engine's stream broke: ${dockerDetail(error)}`, {
      adapter: ADAPTER,
      cause: error,
    });
  } finally {
    (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  }
}

/** The engine's stream, never buffered whole (dockerode buffers a read without `follow`, so it is dialled as a stream). */
function open(docker: DockerApi, endpoint: string, id: string, options: LogReadOptions): Promise<NodeJS.ReadableStream> {
  const query: Record<string, string | number | boolean> = {
    stdout: true,
    stderr: true,
    timestamps: true,
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
