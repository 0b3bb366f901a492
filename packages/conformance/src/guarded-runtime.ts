import { KubeletError, wrapRuntime, type ContainerRuntime, type RuntimeOperation } from '@kubelet-ts/core';

/** The runtime calls that name one container or sandbox (`create` names the sandbox it joins). */
export type ContainerOperation =
  | 'inspect'
  | 'start'
  | 'stop'
  | 'remove'
  | 'exec'
  | 'create'
  | 'stopSandbox'
  | 'removeSandbox'
  | 'stats'
  | 'logs';

/** One call `GuardedRuntime` saw that named a container: the operation, and the container's id. */
export interface ContainerCall {
  readonly op: ContainerOperation;
  readonly id: string;
}

/** Where each call that names a container carries its id (`create`: the sandbox, its second argument). */
const NAMED_BY: Partial<Record<RuntimeOperation, { readonly op: ContainerOperation; readonly arg: number }>> = {
  inspect: { op: 'inspect', arg: 0 },
  start: { op: 'start', arg: 0 },
  stop: { op: 'stop', arg: 0 },
  remove: { op: 'remove', arg: 0 },
  exec: { op: 'exec', arg: 0 },
  stats: { op: 'stats', arg: 0 },
  // What a foreign container printed is not the agent's to read either.
  logs: { op: 'logs', arg: 0 },
  create: { op: 'create', arg: 1 },
  stopSandbox: { op: 'stopSandbox', arg: 0 },
  removeSandbox: { op: 'removeSandbox', arg: 0 },
};

/**
 * A `ContainerRuntime` decorator that proves the agent leaves foreign containers alone. The test
 * says which ids are foreign (`protect`), rather than the guard judging by labels, so the guard
 * does not share the agent's notion of "ours" and cannot share its bugs. Every call naming a
 * container is recorded; one naming a protected container is refused (rejected, never passed
 * on), so a bug cannot stop a real container someone else runs, and is kept in `foreignCalls`.
 * `runtime` is the guarded runtime (hand it to the agent); it keeps every power of the one it wraps.
 */
export class GuardedRuntime {
  readonly runtime: ContainerRuntime;
  /** Every call that named a container, in order, refused ones included. */
  readonly calls: ContainerCall[] = [];
  /** Ids and names of foreign containers. */
  private readonly protectedIds = new Set<string>();

  constructor(inner: ContainerRuntime) {
    this.runtime = wrapRuntime(inner, {
      around: (operation, args, proceed) => {
        const named = NAMED_BY[operation];
        const id = named === undefined ? undefined : args[named.arg];
        if (named === undefined || typeof id !== 'string') return proceed();
        this.calls.push({ op: named.op, id });
        if (this.isProtected(id))
          throw new KubeletError('Internal', `${named.op} of foreign container ${id} refused by GuardedRuntime`, { adapter: inner.name });
        return proceed();
      },
    });
  }

  /** Marks containers or sandboxes as foreign, by id or name: any call naming one is refused and recorded. */
  protect(...idsOrNames: readonly string[]): void {
    for (const id of idsOrNames) this.protectedIds.add(id.replace(/^\//, ''));
  }

  /** The calls that named a protected container; empty when the agent behaved. */
  foreignCalls(): ContainerCall[] {
    return this.calls.filter((c) => this.isProtected(c.id));
  }

  /** Docker also takes a container's name, or any unique prefix of its id. */
  private isProtected(id: string): boolean {
    const wanted = id.replace(/^\//, '');
    if (this.protectedIds.has(wanted)) return true;
    for (const p of this.protectedIds) if (wanted.length >= 4 && /^[0-9a-f]+$/.test(wanted) && p.startsWith(wanted)) return true;
    return false;
  }
}
