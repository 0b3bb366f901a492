import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP forwarder in front of a backend (etcd, say) that a test can cut and restore: while cut, the
 * client behind it finds the backend unreachable (connections reset, new ones dropped) while the
 * test goes on writing to it directly. That is how a test knows for certain that a change was made
 * while the client could not see it.
 */
export class TcpGate {
  private readonly sockets = new Set<Socket>();
  private readonly server = createServer((downstream) => this.forward(downstream));
  private open = true;
  private port = 0;

  private constructor(private readonly target: URL) {}

  /** Listens on a free loopback port and forwards to `target` (`http://127.0.0.1:PORT`). */
  static async listen(target: string): Promise<TcpGate> {
    const gate = new TcpGate(new URL(target));
    await new Promise<void>((resolve) => gate.server.listen(0, '127.0.0.1', resolve));
    const address = gate.server.address();
    if (typeof address !== 'object' || address === null) throw new Error('gate: no address');
    gate.port = address.port;
    return gate;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The connections it forwards now (each a client's socket and its own to the backend). */
  get connections(): number {
    return this.sockets.size / 2;
  }

  /** Resets every forwarded connection and drops new ones until `restore`. */
  cut(): void {
    this.open = false;
    for (const socket of this.sockets) socket.destroy();
  }

  restore(): void {
    this.open = true;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(downstream: Socket): void {
    if (!this.open) {
      downstream.destroy();
      return;
    }
    const upstream = connect(Number(this.target.port), this.target.hostname);
    for (const socket of [downstream, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        this.sockets.delete(socket);
        downstream.destroy();
        upstream.destroy();
      });
    }
    downstream.pipe(upstream).pipe(downstream);
  }
}
