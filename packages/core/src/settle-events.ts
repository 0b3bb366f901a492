import type { ContainerEvent, ContainerState } from './runtime.js';

/** What `settledEvents` checks a held event against (the runtime's list), and how long it waits. */
export interface SettleOptions {
  /**
   * The container's state as the runtime's `list()` has it now; `undefined` when it lists no such
   * container. A rejection passes the event on unchecked.
   */
  readonly listedState: (containerId: string) => Promise<ContainerState | undefined>;
  /** Delays between the checks of one held event. Default every 5 ms for 100 ms, then every 20 ms up to half a second. */
  readonly delaysMs?: readonly number[];
  /** Hears an event passed on while the list still disagreed (or could not be asked), for a debug line. */
  readonly onUnsettled?: (event: ContainerEvent, why: string) => void;
}

// containerd's CRI store lags its exit event by about 50 ms here, Docker's list by 10-20 ms: checked
// finely while that is likely, coarsely after.
const DELAYS_MS: readonly number[] = [...Array<number>(20).fill(5), ...Array<number>(20).fill(20)];

/**
 * An event stream whose `exited` and `removed` events wait until the runtime's list says the same
 * (not running; gone), as `ContainerEventSource` promises. Engines log an exit before the copy
 * their list is read from is updated (Docker's daemon and containerd's CRI plugin both do, by a
 * few milliseconds), and an agent that relists on the event would otherwise see the container
 * still running and do nothing. A list that still disagrees after the delays gets the event anyway:
 * the agent's periodic relist remains the net. Events keep their order.
 */
export async function* settledEvents(
  events: AsyncIterable<ContainerEvent>,
  signal: AbortSignal,
  options: SettleOptions,
): AsyncGenerator<ContainerEvent> {
  for await (const event of events) {
    if (event.type !== 'started') await settle(event, signal, options);
    if (signal.aborted) return;
    yield event;
  }
}

/** Whether the list already says what `event` says. */
function listAgrees(event: ContainerEvent, state: ContainerState | undefined): boolean {
  return event.type === 'removed' ? state === undefined : state !== 'running';
}

async function settle(event: ContainerEvent, signal: AbortSignal, options: SettleOptions): Promise<void> {
  for (const delayMs of [0, ...(options.delaysMs ?? DELAYS_MS)]) {
    if (delayMs > 0) await abortableDelay(delayMs, signal);
    if (signal.aborted) return;
    let state: ContainerState | undefined;
    try {
      state = await options.listedState(event.containerId);
    } catch (error) {
      options.onUnsettled?.(event, `the list could not be asked: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (listAgrees(event, state)) return;
  }
  options.onUnsettled?.(event, `the list still says ${event.type === 'removed' ? 'it exists' : 'running'}`);
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
