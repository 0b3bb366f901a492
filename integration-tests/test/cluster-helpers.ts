import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';

/** This machine's first non-loopback IPv4 address: a node's InternalIP, where the API server reaches it. */
export const machineAddress = (): string => {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('this machine has no IPv4 address but loopback');
};

/** A port free on 127.0.0.1 a moment ago. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });

/** Polls `probe` every 500 ms until it gives a value; fails after `ms` with what it last threw. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
      last = undefined;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s${last === undefined ? '' : ` (last: ${String(last)})`}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The flags of an agent that is node `node` of a cluster, reached on this machine's address at `port`, syncing every second. */
export function nodeFlags(kubeconfig: string, node: string, port: number): string[] {
  return [
    '--kubeconfig',
    kubeconfig,
    '--node-ip',
    machineAddress(),
    '--port',
    String(port),
    '--hostname-override',
    node,
    '--sync-frequency',
    '1s',
  ];
}
