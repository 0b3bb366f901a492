import {
  Labels,
  buildContainerName,
  type ContainerEvent,
  type ContainerEventSource,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerState,
} from '@kubelet-ts/core';
import type { TestApi } from './test-api.js';

/**
 * Declared by runtimes that stream container events (`ContainerEventSource`): how the contract
 * makes a running container exit with code 3 as a kill outside the agent would.
 */
export interface EventsCapability {
  /**
   * Makes the running contract container `containerId` exit with code 3. Default, for runtimes that
   * run real processes: exec `kill 1`, which the container's shell (`EVENTS_COMMAND`) traps.
   */
  readonly kill?: (runtime: ContainerRuntime, containerId: string) => Promise<void>;
}

interface EventsContractOptions {
  readonly name: string;
  readonly image: string;
  readonly events?: EventsCapability;
  readonly testApi: TestApi;
}

/** Runs until SIGTERM, then exits 3 (busybox sh as PID 1 gets the signal because it traps it). */
const EVENTS_COMMAND = ['sh', '-c', 'trap "exit 3" TERM; sleep 3600 & wait'];
/** How long an engine may take to tell of a change. */
const EVENT_WAIT_MS = 10_000;

/** Reads a stream in the background and lets a test wait for the event it expects. */
class EventLog {
  readonly seen: { readonly event: ContainerEvent; readonly at: number }[] = [];
  ended: { readonly error?: unknown } | undefined;
  private wake: () => void = () => undefined;
  readonly done: Promise<void>;

  /** `onEvent` hears each event the moment it arrives (before the stream is read further). */
  constructor(stream: AsyncIterable<ContainerEvent>, onEvent?: (event: ContainerEvent) => void) {
    this.done = (async () => {
      try {
        for await (const event of stream) {
          this.seen.push({ event, at: performance.now() });
          onEvent?.(event);
          this.wake();
        }
        this.ended = {};
      } catch (error) {
        this.ended = { error };
      }
      this.wake();
    })();
  }

  /** The first event (seen or to come) that `match` accepts, with when it arrived. */
  async waitFor(what: string, match: (e: ContainerEvent) => boolean): Promise<{ readonly event: ContainerEvent; readonly at: number }> {
    const deadline = performance.now() + EVENT_WAIT_MS;
    for (;;) {
      const found = this.seen.find((s) => match(s.event));
      if (found !== undefined) return found;
      if (this.ended !== undefined)
        throw new Error(`the event stream ended (${String(this.ended.error ?? 'returned')}) before ${what}; saw ${this.describe()}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`no ${what} within ${EVENT_WAIT_MS} ms; saw ${this.describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  private describe(): string {
    return JSON.stringify(this.seen.map((s) => s.event));
  }
}

/**
 * The event half of `runtimeContract`, for runtimes that declare `events`; otherwise each check is
 * skipped by name. `create` makes a container in the contract's sandbox and removes it after the test.
 */
export function eventsContract(
  runtime: () => ContainerRuntime,
  create: (spec: ContainerSpec) => Promise<{ readonly id: string }>,
  options: EventsContractOptions,
): void {
  const { describe, expect, it } = options.testApi;
  describe('events', () => {
    const capability = options.events;
    const withEvents = (title: string, body: (r: ContainerRuntime, source: ContainerEventSource, c: EventsCapability) => Promise<void>) =>
      capability === undefined
        ? undefined // not declared: the check above holds the runtime to that, and these are left out
        : it(title, async () => {
            const r = runtime();
            const source = r.capabilities.events;
            if (source === undefined) throw new Error(`${options.name} is said to have events, but declares no capabilities.events`);
            await body(r, source, capability);
          }, 30_000);

    it('declares the events capability exactly when it has events, with an events(signal) method', () => {
      const declared = runtime().capabilities.events;
      expect(declared !== undefined).toBe(capability !== undefined);
      if (declared !== undefined) expect(typeof declared.events).toBe('function');
    });

    const spec = (podId: string, labels?: Record<string, string>): ContainerSpec => ({
      name: `${buildContainerName(podId, 'main')}-${Date.now().toString(36)}`,
      podId,
      image: options.image,
      command: EVENTS_COMMAND,
      env: {},
      ports: [],
      mounts: [],
      labels: labels ?? {
        [Labels.manifestId]: podId,
        [Labels.containerName]: 'main',
        [Labels.specHash]: 'v1-events',
        [Labels.source]: 'contract',
        [Labels.node]: 'contract-node',
      },
    });

    withEvents('streams started, exited with its code and removed of its containers, and nothing of foreign ones', async (r, source, c) => {
      const abort = new AbortController();
      // What list() said the moment each exited/removed event arrived: an agent relists on an event
      // at once, and must see what the event said (Docker's list lags its events by milliseconds).
      const listedOnArrival = new Map<string, Promise<ContainerState | 'absent'>>();
      const log = new EventLog(source.events(abort.signal), (event) => {
        if (event.type === 'started') return;
        listedOnArrival.set(
          `${event.type}/${event.containerId}`,
          r.list().then((all) => all.find((x) => x.id === event.containerId)?.state ?? 'absent'),
        );
      });
      try {
        const foreign = await create(spec('events-foreign', { owner: 'someone-else' }));
        await r.start(foreign.id);
        const podId = `events-${process.pid}`;
        const mine = await create(spec(podId));
        await r.start(mine.id);
        const started = await log.waitFor('started', (e) => e.type === 'started' && e.containerId === mine.id);
        expect(started.event).toMatchObject({ podId });
        expect(typeof started.event.time).toBe('number');

        const killedAt = performance.now();
        await (c.kill ?? ((rt, id) => rt.exec(id, ['kill', '1'], 5000).then(() => undefined)))(r, mine.id);
        const exited = await log.waitFor('exited', (e) => e.type === 'exited' && e.containerId === mine.id);
        expect(exited.event).toMatchObject({ podId, exitCode: 3 });
        expect(await listedOnArrival.get(`exited/${mine.id}`)).toBe('exited');
        // Written out by the adapters' contract runs, for the issue's figure (kill → event).
        process.stdout.write(`events contract ${options.name}: kill → exited event in ${(exited.at - killedAt).toFixed(1)} ms\n`);

        await r.remove(foreign.id, { force: true });
        await r.remove(mine.id);
        await log.waitFor('removed', (e) => e.type === 'removed' && e.containerId === mine.id);
        expect(await listedOnArrival.get(`removed/${mine.id}`)).toBe('absent');
        // Events come in order: by our removal, every event of the foreign container would be here.
        expect(log.seen.filter((s) => s.event.containerId === foreign.id).map((s) => s.event)).toEqual([]);
        expect(log.seen.filter((s) => s.event.containerId === mine.id).map((s) => s.event.type)).toEqual(['started', 'exited', 'removed']);
      } finally {
        abort.abort();
        await log.done;
      }
    });

    withEvents('returns promptly when the signal aborts, while waiting for an event', async (_r, source) => {
      const abort = new AbortController();
      const it = source.events(abort.signal)[Symbol.asyncIterator]();
      const pending = it.next();
      setTimeout(() => abort.abort(), 50);
      const startedAt = performance.now();
      await expect(pending).resolves.toMatchObject({ done: true });
      expect(performance.now() - startedAt).toBeLessThan(2000);
      // An aborted signal: ends at once.
      await expect(source.events(abort.signal)[Symbol.asyncIterator]().next()).resolves.toMatchObject({ done: true });
    });
  });
}
