import { isKubeletError, parseLogTime, type AgentView, type ContainerTextRequest, type LogTextOptions } from '@kubelet-ts/core';
import { HttpProblem, decodePathSegment } from './http-kit.js';
import type { RouteAnswer } from './route-handler.js';

/** `/containerLogs/{namespace}/{pod}/{container}`, as the kubelet routes it. */
const ROUTE = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/;

/** What the query asks besides where to read: the kubelet's `PodLogOptions` on its wire. */
interface LogQuery extends LogTextOptions {
  readonly previous: boolean;
}

/** Whether `pathname` is a container's log path (so the route owns it, whatever the method). */
export function isContainerLogsPath(pathname: string): boolean {
  return ROUTE.test(pathname);
}

/**
 * `GET /containerLogs/{namespace}/{pod}/{container}`: what the container printed, as plain text
 * sent in chunks as it comes (`follow` keeps the answer open until the container ends or the client
 * goes away), each line written once the client took the one before. The kubelet's query options:
 * `follow`, `tailLines` (and 2014's `tail`, `all` meaning every line), `sinceSeconds` or
 * `sinceTime`, `timestamps` (each line after its RFC 3339 time, nine digits), `previous`,
 * `limitBytes` (of what is sent, the times included, as the kubelet counts). 400 naming a bad
 * option, 404 naming what is unknown, 400 for a container that has not run yet, 501 when the
 * runtime cannot read output. `now` is the clock `sinceSeconds` counts back from.
 */
export function containerLogsAnswer(view: AgentView, url: URL, now: () => number): RouteAnswer {
  const match = ROUTE.exec(url.pathname);
  if (match === null) throw new Error(`not a container log path: ${url.pathname}`);
  const [namespace, pod, container] = match.slice(1).map((s) => decodePathSegment(s)) as [string, string, string];
  const request: ContainerTextRequest = { namespace, pod, container, ...logQuery(url.searchParams, now()) };
  return {
    status: 200,
    contentType: 'text/plain; charset=utf-8',
    open: async (signal) => {
      let text: AsyncIterable<Uint8Array>;
      try {
        text = await view.containerText({ ...request, signal });
      } catch (error) {
        if (isKubeletError(error, 'NotFound')) throw new HttpProblem(404, error.message);
        if (isKubeletError(error, 'Unsupported')) throw new HttpProblem(501, error.message);
        // The kubelet's answer to a container that waits to start (`is waiting to start: …`).
        if (isKubeletError(error, 'Conflict')) throw new HttpProblem(400, error.message);
        throw error;
      }
      return batched(text);
    },
  };
}

/** Lines sent at most this many bytes to a chunk. */
const BATCH_BYTES = 64 * 1024;
const TURN = Symbol('turn');

/**
 * The lines that are ready together sent as one chunk (up to BATCH_BYTES): what the source gives
 * before the event loop turns (a block of a file, a burst from the engine) goes in one write, and a
 * line that comes alone still goes at once. One write a line made a 100 MB log a million writes.
 */
export async function* batched(lines: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const source = lines[Symbol.asyncIterator]();
  let parts: Uint8Array[] = [];
  let size = 0;
  let turn: Promise<typeof TURN> | undefined;
  const flush = () => {
    const chunk = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    parts = [];
    size = 0;
    turn = undefined;
    return chunk;
  };
  try {
    let pending = source.next();
    for (;;) {
      let next: IteratorResult<Uint8Array> | typeof TURN;
      try {
        next = turn === undefined ? await pending : await Promise.race([pending, turn]);
      } catch (error) {
        // What was read before the source failed is sent before the failure cuts the answer.
        if (parts.length > 0) yield flush();
        throw error;
      }
      if (next === TURN) {
        yield flush();
        continue;
      }
      if (next.done === true) {
        if (parts.length > 0) yield flush();
        return;
      }
      parts.push(next.value);
      size += next.value.length;
      pending = source.next();
      if (size >= BATCH_BYTES) yield flush();
      else turn ??= new Promise((resolve) => setImmediate(() => resolve(TURN)));
    }
  } finally {
    await source.return?.(undefined);
  }
}

/** The query's options, checked one by one; the first one that is wrong is a 400 naming it. */
function logQuery(query: URLSearchParams, now: number): LogQuery {
  const tail = query.get('tail');
  // 2014's `tail` wins over `tailLines`, as the kubelet still takes it; `all` is every line.
  const tailLines = tail === null ? whole(query, 'tailLines', 0) : tail === 'all' ? undefined : whole(query, 'tail', 0);
  const sinceSeconds = whole(query, 'sinceSeconds', 1);
  const sinceTime = time(query, 'sinceTime');
  if (sinceSeconds !== undefined && sinceTime !== undefined) throw new HttpProblem(400, 'give sinceSeconds or sinceTime, not both');
  const sinceMs = sinceSeconds !== undefined ? now - sinceSeconds * 1000 : sinceTime;
  const limitBytes = whole(query, 'limitBytes', 1);
  return {
    follow: flag(query, 'follow'),
    previous: flag(query, 'previous'),
    timestamps: flag(query, 'timestamps'),
    ...(tailLines === undefined ? {} : { tailLines }),
    ...(sinceMs === undefined ? {} : { sinceMs }),
    ...(limitBytes === undefined ? {} : { limitBytes }),
  };
}

/** A Go `strconv.ParseBool` value (`true`, `1`, `t`, `False`, …); absent or empty is false, as the kubelet reads it. */
export function flag(query: URLSearchParams, name: string): boolean {
  const value = query.get(name);
  if (value === null || value === '') return false;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false;
  throw new HttpProblem(400, `${name}: expected true or false, got ${JSON.stringify(value.slice(0, 40))}`);
}

function whole(query: URLSearchParams, name: string, min: number): number | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min)
    throw new HttpProblem(400, `${name}: expected a whole number of at least ${min}, got ${JSON.stringify(value.slice(0, 40))}`);
  return n;
}

/** An RFC 3339 time (`2026-12-04T03:24:06Z`, a fraction and a zone offset allowed), as Kubernetes writes `sinceTime`. */
function time(query: URLSearchParams, name: string): number | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  const parsed = parseLogTime(value);
  if (parsed === undefined)
    throw new HttpProblem(
      400,
      `${name}: expected an RFC 3339 time such as 2026-12-04T03:24:06Z, got ${JSON.stringify(value.slice(0, 40))}`,
    );
  return parsed.time;
}
