import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { Duplex } from 'node:stream';
import { KubeletError } from '@kubelet-ts/core';
import { ADAPTER } from './errors.js';

/**
 * The relay run inside the namespace: it connects to the port on loopback (IPv4, then IPv6, as
 * containerd's CRI does), says `ok` or `fail <code>` on stderr, then copies stdin to the
 * connection (its end half-closes it) and the connection to stdout, and exits once the port has
 * closed the connection and its last bytes are out.
 */
const RELAY = `
const net = require('node:net');
const port = Number(process.argv[1]);
const fail = (e) => { process.stderr.write('fail ' + (e.code || e.message) + '\\n'); process.exit(1); };
// The IPv4 failure is the one told: a namespace without IPv6 fails the second with EADDRNOTAVAIL.
const dial = (hosts, first) => {
  const socket = net.connect({ port, host: hosts[0], allowHalfOpen: true });
  socket.once('error', (e) => (hosts.length > 1 ? dial(hosts.slice(1), first || e) : fail(first || e)));
  socket.once('connect', () => {
    process.stderr.write('ok\\n');
    process.stdin.pipe(socket);
    socket.on('data', (d) => {
      if (!process.stdout.write(d)) {
        socket.pause();
        process.stdout.once('drain', () => socket.resume());
      }
    });
    // The port closed the connection: once its last bytes are out, the relay ends, so the caller's
    // connection ends too (process.stdout cannot be ended: a pipe of it would leave the caller waiting).
    socket.once('end', () => process.stdout.write('', () => process.exit(0)));
    socket.on('error', () => process.exit(1));
  });
};
dial(['127.0.0.1', '::1']);
`;

/** Where to connect: a port in the network namespace of a process. */
export interface NetnsTarget {
  /** A process in the namespace (the sandbox's holder), as the engine's host sees it. */
  readonly pid: number;
  readonly port: number;
  /** How a failure names what was dialled: `port 8080 of pod web`. */
  readonly describe: string;
}

/**
 * A connection to `port` on the loopback address inside the network namespace of process `pid`,
 * as the kubelet's own Docker port-forward made it (`nsenter -t <pid> -n socat - TCP4:localhost:<port>`):
 * a relay process entered into the namespace (`nsenter`, then this Node), one per connection.
 * Node cannot enter a namespace itself; dialling the pod's bridge address instead would miss a
 * server that listens on loopback only, and reach nothing of a rootless engine's pods. It needs
 * the engine on this host and the right to enter its namespaces (root). Resolves once connected;
 * `Unavailable` when nothing listens there or the namespace cannot be entered.
 */
export function connectInNetns(target: NetnsTarget): Promise<Duplex> {
  const { pid, port, describe } = target;
  // Only PATH: NODE_OPTIONS and the like of the agent's process have no business in the relay.
  const child = spawn('nsenter', ['--target', String(pid), '--net', '--', process.execPath, '-e', RELAY, String(port)], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
  });
  return new Promise((resolve, reject) => {
    let said = '';
    const unavailable = (why: string, cause?: unknown) => {
      child.kill('SIGKILL');
      reject(new KubeletError('Unavailable', `port-forward to ${describe}: ${why}`, { adapter: ADAPTER, cause }));
    };
    const onSaid = (chunk: Buffer) => {
      said += chunk.toString('utf8');
      const line = said.split('\n')[0];
      if (!said.includes('\n') || line === undefined) return;
      if (line !== 'ok') return; // a failure is read when the relay exits
      child.stderr.off('data', onSaid);
      child.off('exit', onExit);
      child.off('error', onError);
      child.stderr.resume();
      resolve(new RelayConnection(child));
    };
    const onExit = () => {
      const refused = /^fail (\S+)/.exec(said)?.[1];
      if (refused === 'ECONNREFUSED') return unavailable(`connection refused (nothing listens on port ${port})`);
      if (refused !== undefined) return unavailable(`cannot connect: ${refused}`);
      // nsenter's own words: the process is gone, or entering its namespace was not permitted.
      unavailable(`cannot enter the pod's network namespace (nsenter, as root, on the engine's host): ${said.trim() || 'no reason given'}`);
    };
    const onError = (error: Error) =>
      unavailable(`cannot run nsenter (util-linux) to enter the pod's network namespace: ${error.message}`, error);
    child.stderr.on('data', onSaid);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/**
 * The connection as the caller holds it: what is written goes to the relay's stdin, what the relay
 * prints is what the port sent. Like a socket, it ends its writing side once the other side has
 * ended (`allowHalfOpen: false`), so the relay exits; destroying it kills the relay.
 */
class RelayConnection extends Duplex {
  constructor(private readonly child: ChildProcessWithoutNullStreams) {
    super({ allowHalfOpen: false });
    child.stdout.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) child.stdout.pause();
    });
    child.stdout.once('end', () => this.push(null));
    // A relay killed or failed midway: its stdin refuses writes; the caller sees the end, not an EPIPE.
    child.stdin.on('error', () => undefined);
  }

  override _read(): void {
    this.child.stdout.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.child.stdin.destroyed) callback();
    else this.child.stdin.write(chunk, () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.child.stdin.destroyed) callback();
    else this.child.stdin.end(() => callback());
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    this.child.stdin.destroy();
    this.child.stdout.destroy();
    this.child.stderr.destroy();
    callback(error);
  }
}
