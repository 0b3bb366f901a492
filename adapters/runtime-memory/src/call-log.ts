import { KubeletError, sleep, type Clock, type ErrorCode, type RuntimeOperation } from '@kubelet-ts/core';

export type { RuntimeOperation };

/** One recorded call. `target` is the container id, image or name the call was about. */
export interface RuntimeCall {
  readonly op: RuntimeOperation;
  readonly target?: string;
  readonly time: number;
}

/** Decides, per call, whether it fails. Return an error to fail the call, `undefined` to let it run. */
export type Fault = (call: RuntimeCall) => Error | undefined;

/** Decides, per call, how many milliseconds it takes on the clock before it acts. */
export type Latency = (call: RuntimeCall) => number;

/**
 * The record and the knobs of the in-memory runtime's calls: every call is logged with its time,
 * counted, and may be made to take time on the clock or to fail, per operation.
 */
export abstract class CallLog {
  /** The latest calls in order (at least the last `callLogSize`), faulted ones included. */
  readonly calls: RuntimeCall[] = [];
  private readonly counts = new Map<RuntimeOperation, number>();
  private readonly faults = new Map<RuntimeOperation, Fault>();
  private readonly latency = new Map<RuntimeOperation, Latency>();

  protected constructor(
    readonly clock: Clock,
    private readonly callLogSize: number,
  ) {}

  abstract readonly name: string;

  /** Every call to `op` consults `fault` first; `undefined` clears it. */
  setFault(op: RuntimeOperation, fault: Fault | undefined): void {
    if (fault === undefined) this.faults.delete(op);
    else this.faults.set(op, fault);
  }

  /** The next `times` calls to `op` fail with `code`. */
  failNext(op: RuntimeOperation, code: ErrorCode = 'Unavailable', times = 1): void {
    let left = times;
    this.setFault(op, (call) => {
      if (left <= 0) return undefined;
      left -= 1;
      if (left === 0) this.faults.delete(op);
      return new KubeletError(code, `injected ${code} fault on ${call.op}${call.target === undefined ? '' : ` ${call.target}`}`, {
        adapter: this.name,
      });
    });
  }

  /** Every call to `op` takes `ms` on the clock before it acts (a function: per call); 0 clears it. */
  setLatency(op: RuntimeOperation, ms: number | Latency): void {
    if (ms === 0) this.latency.delete(op);
    else this.latency.set(op, typeof ms === 'number' ? () => ms : ms);
  }

  /** Calls made so far to `op` (all operations when omitted). */
  callCount(op?: RuntimeOperation): number {
    if (op !== undefined) return this.counts.get(op) ?? 0;
    let total = 0;
    for (const n of this.counts.values()) total += n;
    return total;
  }

  /** Logs the call, waits its latency, then fails it if a fault says so. */
  protected async enter(op: RuntimeOperation, target?: string): Promise<void> {
    const call: RuntimeCall = target === undefined ? { op, time: this.clock.now() } : { op, target, time: this.clock.now() };
    this.calls.push(call);
    // Trimmed in batches, so keeping the log bounded costs O(1) per call.
    if (this.calls.length >= 2 * this.callLogSize) this.calls.splice(0, this.calls.length - this.callLogSize);
    this.counts.set(op, (this.counts.get(op) ?? 0) + 1);
    const delay = this.latency.get(op)?.(call) ?? 0;
    if (delay > 0) await sleep(this.clock, delay);
    const error = this.faults.get(op)?.(call);
    if (error !== undefined) throw error;
  }
}
