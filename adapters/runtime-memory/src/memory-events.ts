import { EventEmitter, on } from 'node:events';
import { KubeletError, Labels, type ContainerEvent } from '@kubelet-ts/core';

/**
 * The in-memory runtime's event stream: the runtime calls `emit` from the very call that changed a
 * container, so events arrive in the order the changes happened, and `break` ends every open
 * stream with an error, as a lost engine connection would.
 */
export class MemoryEvents {
  // Node's `on(emitter)` is the queue: it buffers from subscription and honours an AbortSignal.
  private readonly emitter = new EventEmitter();

  constructor(private readonly adapter: string) {
    // One listener pair per open stream; an agent and its tests may hold many.
    this.emitter.setMaxListeners(0);
  }

  /** Tells every open stream about a change of a container with these labels; foreign ones are not told. */
  emit(type: ContainerEvent['type'], containerId: string, labels: Readonly<Record<string, string>>, time: number, exitCode?: number): void {
    const podId = labels[Labels.manifestId];
    if (podId === undefined) return;
    const event: ContainerEvent =
      exitCode === undefined ? { type, containerId, podId, time } : { type, containerId, podId, exitCode, time };
    this.emitter.emit('event', event);
  }

  /** Ends every open stream with `error` (default: `Unavailable`); streams opened later work again. */
  break(error?: Error): void {
    // `emit('error')` with no listener would throw at the caller.
    if (this.emitter.listenerCount('error') === 0) return;
    this.emitter.emit(
      'error',
      error ?? new KubeletError('Unavailable', 'event stream broken (breakEvents); reconnect and relist', { adapter: this.adapter }),
    );
  }

  /** How many streams are open (to check that aborted ones let go). */
  get openStreams(): number {
    return this.emitter.listenerCount('event');
  }

  /** The contract's `events(signal)`: subscribes at the first `next()`, returns when `signal` aborts. */
  async *stream(signal: AbortSignal): AsyncGenerator<ContainerEvent> {
    if (signal.aborted) return;
    try {
      for await (const [event] of on(this.emitter, 'event', { signal })) {
        // `on` still hands out what it buffered before the abort; the contract says the stream ends.
        if (signal.aborted) return;
        yield event as ContainerEvent;
      }
    } catch (error) {
      if (signal.aborted && (error as Error).name === 'AbortError') return;
      throw error;
    }
  }
}
