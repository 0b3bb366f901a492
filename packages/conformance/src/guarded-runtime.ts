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

/** The runtime calls that name one container or sandbox (`create` names the sandbox it joins). */
export type ContainerOperation = 'inspect' | 'start' | 'stop' | 'remove' | 'exec' | 'create' | 'stopSandbox' | 'removeSandbox';

export interface ContainerCall {
  readonly op: ContainerOperation;
  readonly id: string;
}

/**
 * A `ContainerRuntime` decorator that proves the agent leaves foreign containers alone. The test
 * says which ids are foreign (`protect`), rather than the guard judging by labels, so the guard
 * does not share the agent's notion of "ours" and cannot share its bugs. Every call naming a
 * container is recorded; one naming a protected container is refused (rejected, never passed
 * on), so a bug cannot stop a real container someone else runs, and is kept in `foreignCalls`.
 */
export class GuardedRuntime implements ContainerRuntime {
  readonly name: string;
  /** Every call that named a container, in order, refused ones included. */
  readonly calls: ContainerCall[] = [];
  /** Ids and names of foreign containers. */
  private readonly protectedIds = new Set<string>();

  constructor(private readonly inner: ContainerRuntime) {
    this.name = inner.name;
  }

  /** Marks containers or sandboxes as foreign, by id or name: any call naming one is refused and recorded. */
  protect(...idsOrNames: readonly string[]): void {
    for (const id of idsOrNames) this.protectedIds.add(id.replace(/^\//, ''));
  }

  /** The calls that named a protected container; empty when the agent behaved. */
  foreignCalls(): ContainerCall[] {
    return this.calls.filter((c) => this.isProtected(c.id));
  }

  runSandbox(spec: SandboxSpec): Promise<SandboxSummary> {
    return this.inner.runSandbox(spec);
  }

  listSandboxes(options?: ListOptions): Promise<SandboxSummary[]> {
    return this.inner.listSandboxes(options);
  }

  stopSandbox(id: string): Promise<void> {
    return this.guard('stopSandbox', id, () => this.inner.stopSandbox(id));
  }

  removeSandbox(id: string, options?: { readonly volumes?: boolean }): Promise<void> {
    return this.guard('removeSandbox', id, () => this.inner.removeSandbox(id, options));
  }

  list(options?: ListOptions): Promise<ContainerSummary[]> {
    return this.inner.list(options);
  }

  inspect(id: string): Promise<ContainerDetails> {
    return this.guard('inspect', id, () => this.inner.inspect(id));
  }

  create(spec: ContainerSpec, sandboxId?: string): Promise<ContainerSummary> {
    // Joining a foreign namespace holder is using it.
    if (sandboxId === undefined) return this.inner.create(spec);
    return this.guard('create', sandboxId, () => this.inner.create(spec, sandboxId));
  }

  start(id: string): Promise<void> {
    return this.guard('start', id, () => this.inner.start(id));
  }

  stop(id: string, timeoutSeconds: number): Promise<void> {
    return this.guard('stop', id, () => this.inner.stop(id, timeoutSeconds));
  }

  remove(id: string, options?: { readonly force?: boolean }): Promise<void> {
    return this.guard('remove', id, () => this.inner.remove(id, options));
  }

  pull(image: string): Promise<void> {
    return this.inner.pull(image);
  }

  hasImage(image: string): Promise<boolean> {
    return this.inner.hasImage(image);
  }

  exec(id: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
    return this.guard('exec', id, () => this.inner.exec(id, command, timeoutMs));
  }

  private async guard<T>(op: ContainerOperation, id: string, call: () => Promise<T>): Promise<T> {
    this.calls.push({ op, id });
    if (this.isProtected(id)) throw new KubeletError('Internal', `${op} of foreign container ${id} refused by GuardedRuntime`, { adapter: this.name });
    return call();
  }

  /** Docker also takes a container's name, or any unique prefix of its id. */
  private isProtected(id: string): boolean {
    const wanted = id.replace(/^\//, '');
    if (this.protectedIds.has(wanted)) return true;
    for (const p of this.protectedIds) if (wanted.length >= 4 && /^[0-9a-f]+$/.test(wanted) && p.startsWith(wanted)) return true;
    return false;
  }
}
