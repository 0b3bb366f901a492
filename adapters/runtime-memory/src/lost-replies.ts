import {
  KubeletError,
  type ContainerDetails,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerSummary,
  type ExecResult,
  type ListOptions,
  type SandboxSpec,
  type SandboxSummary,
} from '@kubelet-ts/core';
import type { RuntimeOperation } from './memory-runtime.js';
import type { SeededRandom } from './seeded-random.js';

/**
 * Any `ContainerRuntime`, with replies that get lost: a share of calls reach the runtime and act,
 * and then the caller is told they timed out, as when an engine's answer never arrives. The
 * faults `SeededFaultInjector` injects happen before a call acts; these happen after, which is the
 * harder case for the agent (a container it was told was not created exists). Seeded: one seed
 * loses the same replies every run.
 */
export class LostReplies implements ContainerRuntime {
  readonly name: string;
  /** Replies lost so far. */
  lost = 0;
  private active = false;

  constructor(
    private readonly inner: ContainerRuntime,
    private readonly random: SeededRandom,
    private readonly rate: number,
  ) {
    this.name = inner.name;
  }

  /** Starts losing replies (named apart from the runtime's own start and stop). */
  enable(): void {
    this.active = true;
  }

  /** Every reply arrives again. */
  disable(): void {
    this.active = false;
  }

  runSandbox(spec: SandboxSpec): Promise<SandboxSummary> {
    return this.relay('runSandbox', () => this.inner.runSandbox(spec));
  }

  listSandboxes(options?: ListOptions): Promise<SandboxSummary[]> {
    return this.relay('listSandboxes', () => this.inner.listSandboxes(options));
  }

  stopSandbox(id: string): Promise<void> {
    return this.relay('stopSandbox', () => this.inner.stopSandbox(id));
  }

  removeSandbox(id: string, options?: { readonly volumes?: boolean }): Promise<void> {
    return this.relay('removeSandbox', () => this.inner.removeSandbox(id, options));
  }

  list(options?: ListOptions): Promise<ContainerSummary[]> {
    return this.relay('list', () => this.inner.list(options));
  }

  inspect(id: string): Promise<ContainerDetails> {
    return this.relay('inspect', () => this.inner.inspect(id));
  }

  create(spec: ContainerSpec, sandboxId?: string): Promise<ContainerSummary> {
    return this.relay('create', () => this.inner.create(spec, sandboxId));
  }

  start(id: string): Promise<void> {
    return this.relay('start', () => this.inner.start(id));
  }

  stop(id: string, timeoutSeconds: number): Promise<void> {
    return this.relay('stop', () => this.inner.stop(id, timeoutSeconds));
  }

  remove(id: string, options?: { readonly force?: boolean }): Promise<void> {
    return this.relay('remove', () => this.inner.remove(id, options));
  }

  pull(image: string): Promise<void> {
    return this.relay('pull', () => this.inner.pull(image));
  }

  hasImage(image: string): Promise<boolean> {
    return this.relay('hasImage', () => this.inner.hasImage(image));
  }

  exec(id: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
    return this.relay('exec', () => this.inner.exec(id, command, timeoutMs));
  }

  private async relay<T>(op: RuntimeOperation, call: () => Promise<T>): Promise<T> {
    const result = await call();
    if (this.active && this.random.chance(this.rate)) {
      this.lost += 1;
      throw new KubeletError('Timeout', `chaos: the reply to ${op} was lost (the call went through)`, { adapter: this.name });
    }
    return result;
  }
}
