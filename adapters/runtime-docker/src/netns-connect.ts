import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { KubeletError } from '@kubelet-ts/core';
import { ADAPTER } from './errors.js';

/**
 * The helper run inside a pod's network namespace: one per namespace, however many connections.
 * Asked `{ id, port }` on its IPC channel, it connects to the port on loopback (IPv4, then IPv6, as
 * containerd's CRI does) and hands the connected socket itself to the agent (`{ id }` with the
 * socket's descriptor), or answers `{ id, fail }`. The socket stays in the pod's namespace after
 * the hand-over, so the agent reads and writes it as any other: no copy through this process.
 * It is paused before being handed over, so that nothing the port says first is read here and
 * lost. The helper ends when its channel does (the agent is gone, or asked it to end).
 */
const HELPER = `
const net = require('node:net');
process.on('disconnect', () => process.exit(0));
process.on('message', ({ id, port }) => {
  // The IPv4 failure is the one told: a namespace without IPv6 fails the second with EADDRNOTAVAIL.
  const dial = (hosts, first) => {
    const socket = net.connect({ port, host: hosts[0], allowHalfOpen: true });
    socket.once('error', (e) => {
      const told = first || e;
      if (hosts.length > 1) dial(hosts.slice(1), told);
      else if (process.connected) process.send({ id, fail: String(told.code || told.message) });
    });
    socket.once('connect', () => {
      socket.pause();
      // What befalls it before it is handed over is the agent's to see, not this process's to die of.
      socket.on('error', () => undefined);
      if (process.connected) process.send({ id }, socket);
      else socket.destroy();
    });
  };
  dial(['127.0.0.1', '::1']);
});
`;

/** Where to connect: a port in the network namespace of a sandbox's process. */
export interface NetnsTarget {
  /** The sandbox (the engine's id): its helper is ended with it. */
  readonly sandbox: string;
  /** A process in the namespace (the sandbox's holder), as the engine's host sees it. */
  readonly pid: number;
  readonly port: number;
  /** How a failure names what was dialled: `port 8080 of pod web`. */
  readonly describe: string;
}

export interface NetnsDialerOptions {
  /** How long a helper with nothing to dial is kept for the next connection. Default 10 s. */
  readonly idleMs?: number;
}

const DEFAULT_HELPER_IDLE_MS = 10_000;

interface Pending {
  readonly port: number;
  readonly describe: string;
  readonly resolve: (socket: Socket) => void;
  readonly reject: (error: KubeletError) => void;
}

/** One namespace's helper: its process, what it was asked and not yet answered, its idle timer. */
interface Helper {
  readonly sandbox: string;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly pending: Map<number, Pending>;
  /** What nsenter or the helper said on stderr, for a failure to enter the namespace. */
  said: string;
  idle: NodeJS.Timeout | undefined;
}

/**
 * Connections to ports on the loopback address inside pods' network namespaces, as the kubelet's
 * own Docker port-forward made them (`nsenter -t <pid> -n socat - TCP4:localhost:<port>`), without
 * a process per connection: one helper per namespace (`nsenter`, then this Node) dials and hands
 * each connected socket over to the agent, which then holds it as its own. A helper is kept
 * `idleMs` after its last dial, ended at once when its sandbox is stopped or removed (`forget`)
 * or the dialer is closed, and ends by itself if the agent goes.
 *
 * Node cannot enter a namespace itself; dialling the pod's bridge address instead would miss a
 * server that listens on loopback only, and reach nothing of a rootless engine's pods. It needs
 * the engine on this host and the right to enter its namespaces (root).
 */
export class NetnsDialer {
  private readonly idleMs: number;
  private readonly helpers = new Map<string, Helper>();
  private next = 0;
  private closed = false;

  constructor(options: NetnsDialerOptions = {}) {
    this.idleMs = options.idleMs ?? DEFAULT_HELPER_IDLE_MS;
  }

  /**
   * A connection to the port, resolved once connected: a socket in the pod's namespace.
   * `Unavailable` when nothing listens there or the namespace cannot be entered.
   */
  connect(target: NetnsTarget): Promise<Socket> {
    const { port, describe } = target;
    if (this.closed) return Promise.reject(unavailable(describe, 'the runtime is closed'));
    const helper = this.helperFor(target);
    if (helper instanceof KubeletError) return Promise.reject(helper);
    if (helper.idle !== undefined) clearTimeout(helper.idle);
    helper.idle = undefined;
    const id = this.next++;
    return new Promise<Socket>((resolve, reject) => {
      helper.pending.set(id, { port, describe, resolve, reject });
      helper.child.send({ id, port }, (error: Error | null) => {
        if (error !== null) this.settle(helper, id, { fail: `cannot ask the helper: ${error.message}` });
      });
    });
  }

  /** Ends the helper of a sandbox that stops or goes: it would keep the namespace alive. */
  forget(sandbox: string): void {
    for (const helper of [...this.helpers.values()])
      if (helper.sandbox === sandbox || helper.sandbox.startsWith(sandbox)) this.end(helper, 'its sandbox stopped');
  }

  /** Ends every helper; later connections are refused. */
  close(): void {
    this.closed = true;
    for (const helper of [...this.helpers.values()]) this.end(helper, 'the runtime is closed');
  }

  private helperFor(target: NetnsTarget): Helper | KubeletError {
    const known = this.helpers.get(target.sandbox);
    // The same sandbox with another holder (restarted): the old helper is in the old namespace.
    if (known !== undefined && known.pid === target.pid && known.child.connected) return known;
    if (known !== undefined) this.end(known, 'its sandbox has another holder');
    // Only PATH: NODE_OPTIONS and the like of the agent's process have no business in the helper.
    let child: ChildProcess;
    try {
      child = spawn('nsenter', ['--target', String(target.pid), '--net', '--', process.execPath, '-e', HELPER], {
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        env: { PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
      });
    } catch (error) {
      return unavailable(
        target.describe,
        `cannot run nsenter (util-linux) to enter the pod's network namespace: ${(error as Error).message}`,
        error,
      );
    }
    const helper: Helper = { sandbox: target.sandbox, pid: target.pid, child, pending: new Map(), said: '', idle: undefined };
    this.helpers.set(target.sandbox, helper);
    // Neither the process nor its channel keeps the agent's process alive; a pending dial does (its caller waits).
    child.unref();
    (child.channel as { unref?: () => void } | undefined)?.unref?.();
    child.stderr?.on('data', (chunk: Buffer) => {
      if (helper.said.length < 4096) helper.said += chunk.toString('utf8');
    });
    child.on('message', (message: { id: number; fail?: string }, socket?: Socket) => this.settle(helper, message.id, message, socket));
    child.once('error', (error) =>
      this.fail(helper, `cannot run nsenter (util-linux) to enter the pod's network namespace: ${error.message}`, error),
    );
    child.once('close', () =>
      // nsenter's own words: the process is gone, or entering its namespace was not permitted.
      this.fail(
        helper,
        `cannot enter the pod's network namespace (nsenter, as root, on the engine's host): ${helper.said.trim() || 'no reason given'}`,
      ),
    );
    return helper;
  }

  private settle(helper: Helper, id: number, answer: { fail?: string }, socket?: Socket): void {
    const pending = helper.pending.get(id);
    if (pending === undefined) {
      socket?.destroy();
      return;
    }
    helper.pending.delete(id);
    if (answer.fail === undefined && socket !== undefined) pending.resolve(socket);
    else if (answer.fail === 'ECONNREFUSED')
      pending.reject(unavailable(pending.describe, `connection refused (nothing listens on port ${pending.port})`));
    else pending.reject(unavailable(pending.describe, `cannot connect: ${answer.fail ?? 'no socket handed over'}`));
    if (helper.pending.size === 0 && this.helpers.get(helper.sandbox) === helper) {
      helper.idle = setTimeout(() => this.end(helper, 'idle'), this.idleMs);
      helper.idle.unref();
    }
  }

  /** The helper is gone: what it was asked fails with `why`. */
  private fail(helper: Helper, why: string, cause?: unknown): void {
    if (this.helpers.get(helper.sandbox) === helper) this.helpers.delete(helper.sandbox);
    if (helper.idle !== undefined) clearTimeout(helper.idle);
    for (const pending of helper.pending.values()) pending.reject(unavailable(pending.describe, why, cause));
    helper.pending.clear();
  }

  private end(helper: Helper, why: string): void {
    this.fail(helper, why);
    if (helper.child.exitCode === null && helper.child.signalCode === null) helper.child.kill('SIGKILL');
  }
}

function unavailable(describe: string, why: string, cause?: unknown): KubeletError {
  return new KubeletError('Unavailable', `port-forward to ${describe}: ${why}`, { adapter: ADAPTER, cause });
}
