import { createInterface } from 'node:readline';
import { KubeletError, Labels, type ContainerEvent, type Logger } from '@kubelet-ts/core';
import type { Readable } from 'node:stream';
import type { DockerEventFilters } from './docker-api.js';
import type { EngineKind } from './engine-kind.js';
import { ADAPTER, dockerDetail, translate } from './errors.js';

export interface DockerEventsOptions {
  readonly getEvents: (options: { since: number; filters: DockerEventFilters }) => Promise<NodeJS.ReadableStream>;
  readonly engine: () => Promise<EngineKind>;
  readonly endpoint: string;
  readonly logger: Logger;
}

/** One line of `GET /events`, as far as this adapter reads it (Docker and Podman alike). */
interface DockerEventLine {
  Type?: string;
  Action?: string;
  status?: string;
  id?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  time?: number;
  timeNano?: number;
}

/**
 * The filters of the event stream. Docker: our label and `start`, `die`, `destroy`. Podman 4.3
 * names the events it filters `died` and `remove` (`die` and `destroy` match nothing there, though
 * the lines it sends say `die`), and its label filter wants `key=value` (a key alone matches
 * nothing): the label is checked here instead, on the attributes every line carries.
 */
export function eventFilters(kind: EngineKind): DockerEventFilters {
  return kind === 'podman'
    ? { type: ['container'], event: ['start', 'died', 'remove'] }
    : { type: ['container'], label: [Labels.manifestId], event: ['start', 'die', 'destroy'] };
}

/** A line of the engine's stream as a `ContainerEvent`; `undefined` for other actions and foreign containers. */
export function containerEventOf(line: DockerEventLine, heardAt: number): ContainerEvent | undefined {
  if (line.Type !== undefined && line.Type !== 'container') return undefined;
  const attributes = line.Actor?.Attributes ?? {};
  const podId = attributes[Labels.manifestId];
  const containerId = line.Actor?.ID ?? line.id;
  if (podId === undefined || containerId === undefined) return undefined;
  const time = typeof line.timeNano === 'number' ? line.timeNano / 1e6 : typeof line.time === 'number' ? line.time * 1000 : heardAt;
  switch (line.Action ?? line.status) {
    case 'start':
      return { type: 'started', containerId, podId, time };
    case 'die':
    case 'died': {
      const exitCode = Number(attributes['exitCode'] ?? attributes['containerExitCode']);
      return Number.isInteger(exitCode)
        ? { type: 'exited', containerId, podId, exitCode, time }
        : { type: 'exited', containerId, podId, time };
    }
    case 'destroy':
    case 'remove':
      return { type: 'removed', containerId, podId, time };
    default:
      return undefined;
  }
}

/**
 * `ContainerEventSource.events` on the Docker API (`GET /events`, one JSON object a line). It asks
 * from the moment it is first iterated (`since`, to the nanosecond, so the engine replays what
 * happened while the request was on its way); an abort closes the response; a response that ends
 * or fails otherwise ends the iteration with `Unavailable`.
 */
export async function* dockerEvents(signal: AbortSignal, options: DockerEventsOptions): AsyncGenerator<ContainerEvent> {
  if (signal.aborted) return;
  const since = Date.now() / 1000;
  const kind = await options.engine();
  let stream: Readable;
  try {
    // dockerode hands back the HTTP response, a Readable.
    stream = (await options.getEvents({ since, filters: eventFilters(kind) })) as Readable;
  } catch (error) {
    throw translate(error, 'watch container events', options.endpoint);
  }
  let failure: unknown;
  stream.on('error', (error: unknown) => {
    failure ??= error;
  });
  // readline joins lines split across chunks and splits chunks holding several.
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  // A destroyed response need not say `end`, which is all readline listens for.
  stream.on('close', () => lines.close());
  const close = () => {
    lines.close();
    stream.destroy();
  };
  signal.addEventListener('abort', close, { once: true });
  try {
    if (signal.aborted) return;
    for await (const text of lines) {
      if (signal.aborted) return;
      if (text.trim() === '') continue;
      let line: DockerEventLine;
      try {
        line = JSON.parse(text) as DockerEventLine;
      } catch (error) {
        options.logger.warn(
          { endpoint: options.endpoint, line: text.slice(0, 200), error: String(error) },
          'skipped an event line that is not JSON',
        );
        continue;
      }
      const event = containerEventOf(line, Date.now());
      if (event !== undefined) yield event;
    }
  } catch (error) {
    failure ??= error;
  } finally {
    signal.removeEventListener('abort', close);
    close();
  }
  if (signal.aborted) return;
  const why = failure === undefined ? 'the engine closed it' : dockerDetail(failure);
  throw new KubeletError(
    'Unavailable',
    `the event stream of the engine at ${options.endpoint} ended (${why}); reconnect, and relist, since events may have been missed`,
    {
      adapter: ADAPTER,
      ...(failure === undefined ? {} : { cause: failure }),
    },
  );
}
