import { KubeletError, type ErrorCode } from '@kubelet-ts/core';
import type { Fault, MemoryRuntime, RuntimeOperation } from './memory-runtime.js';
import type { SeededRandom } from './seeded-random.js';

/** Every operation of the runtime contract. */
export const RUNTIME_OPERATIONS: readonly RuntimeOperation[] = [
  'runSandbox',
  'listSandboxes',
  'stopSandbox',
  'removeSandbox',
  'list',
  'inspect',
  'create',
  'start',
  'stop',
  'remove',
  'pull',
  'hasImage',
  'exec',
  'stats',
  'logs',
];

/** The codes a runtime call may answer with (an invalid manifest is never the runtime's answer). */
const RUNTIME_CODES: readonly ErrorCode[] = ['NotFound', 'Conflict', 'Unavailable', 'Timeout', 'Internal'];

/** How `SeededFaultInjector` fails calls: how often, with which codes, on which calls, and how much latency it adds. */
export interface SeededFaultInjectorOptions {
  /** Share of calls that fail, from 0 to 1. Default 0.2. */
  readonly failureRate?: number;
  /** What a failed call rejects with, one picked at random per failure. Default: every runtime code. */
  readonly codes?: readonly ErrorCode[];
  /** Each call first waits a random 0 to `maxLatencyMs` on the runtime's clock. Default 0. */
  readonly maxLatencyMs?: number;
  /** The operations to disturb. Default: all of them. */
  readonly operations?: readonly RuntimeOperation[];
}

/**
 * Chaos for a `MemoryRuntime`, drawn from a seeded generator: a share of calls fail with a random
 * code, and every call takes a random time on the clock. A failed call fails before it acts, as an
 * engine that could not be reached would, and never with an answer the contract reads as success. With a `ManualClock`, the same seed gives the same
 * faults at the same calls, so a failing run can be replayed.
 */
export class SeededFaultInjector {
  /** Calls failed so far. */
  injected = 0;
  private readonly failureRate: number;
  private readonly codes: readonly ErrorCode[];
  private readonly maxLatencyMs: number;
  private readonly operations: readonly RuntimeOperation[];

  constructor(
    private readonly runtime: MemoryRuntime,
    private readonly random: SeededRandom,
    options: SeededFaultInjectorOptions = {},
  ) {
    this.failureRate = options.failureRate ?? 0.2;
    this.codes = options.codes ?? RUNTIME_CODES;
    this.maxLatencyMs = options.maxLatencyMs ?? 0;
    this.operations = options.operations ?? RUNTIME_OPERATIONS;
  }

  /** Installs the faults and latency on the runtime (replacing any set for those operations). */
  start(): void {
    for (const op of this.operations) {
      // The contract reads NotFound from stop or remove as "already gone", i.e. as success: a fault
      // must not claim what did not happen (the agent would start a container's new version beside
      // the old one, still running), so those two fail with the other codes only.
      const codes = op === 'stop' || op === 'remove' || op === 'removeSandbox' ? this.codes.filter((c) => c !== 'NotFound') : this.codes;
      if (codes.length > 0) this.runtime.setFault(op, this.fault(codes));
      if (this.maxLatencyMs > 0) this.runtime.setLatency(op, () => this.random.int(this.maxLatencyMs + 1));
    }
  }

  private fault(codes: readonly ErrorCode[]): Fault {
    return (call) => {
      if (!this.random.chance(this.failureRate)) return undefined;
      this.injected += 1;
      const code = this.random.pick(codes);
      return new KubeletError(code, `chaos: injected ${code} on ${call.op}${call.target === undefined ? '' : ` ${call.target}`}`, {
        adapter: this.runtime.name,
      });
    };
  }

  /** Removes them: calls succeed at once again. */
  stop(): void {
    for (const op of this.operations) {
      this.runtime.setFault(op, undefined);
      this.runtime.setLatency(op, 0);
    }
  }
}
