import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { type StartedTestContainer, Wait } from 'testcontainers';
import { containerLogs, containerPid, LoopbackContainer, removeContainer } from './containers.js';
import { independentDocker } from './engine.js';
import { buildTestImages } from './images.js';

/** How a test's etcd is secured; by default it is plain HTTP with no authentication. */
export interface EtcdServerOptions {
  /**
   * Serve the client port over TLS with this pair (`https://` endpoint), and with `clientCa`,
   * require a client certificate signed by that CA (`--client-cert-auth --trusted-ca-file`).
   * `ca` is what a client must trust to reach it (used for the health check too).
   */
  readonly tls?: {
    readonly ca: { readonly certFile: string; readonly cert: string };
    readonly server: { readonly certFile: string; readonly keyFile: string };
    /** With it, the health check presents this pair. */
    readonly clientCa?: { readonly certFile: string };
    readonly client?: { readonly cert: string; readonly key: string };
  };
  /**
   * Enable etcd's authentication once it is up, with user `root` (role `root`) and this password
   * (what `etcdctl user add root && etcdctl auth enable` does, here through the JSON gateway, so
   * without `tls` only: the gateway calls use fetch).
   */
  readonly rootPassword?: string;
  /**
   * etcd's `--max-txn-ops` (default 128): the most operations one transaction may hold. A bench
   * writing every host's key in one transaction needs one per host.
   */
  readonly maxTxnOps?: number;
  /**
   * etcd's `--max-request-bytes` (default 1.5 MiB): the largest request it takes. A transaction
   * putting 10,000 hosts' manifests is about 3 MB.
   */
  readonly maxRequestBytes?: number;
}

/**
 * A real etcd (Debian's etcd-server, in the test image `TEST_IMAGES.etcd`) of this test's own,
 * started through testcontainers: on the host's network, listening on free loopback ports only,
 * its data in the container. Fault tests stop it and start it again (the container's stop and start: the same
 * port and data), which is "etcd went down and came back" to a client; the etcd that `npm test`
 * starts is never touched.
 */
export class EtcdServer {
  readonly endpoint: string;
  /** The container's host pid while it runs (for a kill at an exact moment from outside this process). */
  private hostPid: number | undefined;

  private constructor(
    private readonly container: StartedTestContainer,
    clientPort: number,
    private readonly options: EtcdServerOptions,
  ) {
    this.endpoint = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${clientPort}`;
  }

  /** Starts a fresh etcd and resolves once it answers `/health` (and has auth on, if asked). */
  static async launch(options: EtcdServerOptions = {}): Promise<EtcdServer> {
    const images = await buildTestImages();
    const clientPort = await freePort();
    const peer = `http://127.0.0.1:${await freePort()}`;
    const scheme = options.tls === undefined ? 'http' : 'https';
    const tls = options.tls;
    const container = new LoopbackContainer(images.etcd, 'etcd')
      // On the host's network, listening on its loopback only: clients reach etcd itself, as they
      // did a process, not a proxy (Docker's userland proxy takes two descriptors a connection,
      // and the fleet bench opens 10,000), and a stopped etcd refuses at once. The ports are
      // fixed: a client that outlives a stop reconnects where it was.
      .withNetworkMode('host')
      .withCommand([
        '--name',
        'test',
        '--data-dir',
        '/var/lib/etcd',
        '--listen-client-urls',
        `${scheme}://127.0.0.1:${clientPort}`,
        '--advertise-client-urls',
        `${scheme}://127.0.0.1:${clientPort}`,
        '--listen-peer-urls',
        peer,
        '--initial-advertise-peer-urls',
        peer,
        '--initial-cluster',
        `test=${peer}`,
        // A lone member elects itself after one election timeout, also when it restarts: keep it short.
        '--heartbeat-interval',
        '25',
        '--election-timeout',
        '250',
        '--logger',
        'zap',
        ...(tls === undefined
          ? []
          : [
              '--cert-file',
              '/etc/etcd/server.pem',
              '--key-file',
              '/etc/etcd/server-key.pem',
              ...(tls.clientCa === undefined ? [] : ['--client-cert-auth', '--trusted-ca-file', '/etc/etcd/client-ca.pem']),
            ]),
        ...(options.maxTxnOps === undefined ? [] : ['--max-txn-ops', String(options.maxTxnOps)]),
        ...(options.maxRequestBytes === undefined ? [] : ['--max-request-bytes', String(options.maxRequestBytes)]),
      ])
      .withCopyFilesToContainer(
        tls === undefined
          ? []
          : [
              { source: tls.server.certFile, target: '/etc/etcd/server.pem' },
              { source: tls.server.keyFile, target: '/etc/etcd/server-key.pem' },
              ...(tls.clientCa === undefined ? [] : [{ source: tls.clientCa.certFile, target: '/etc/etcd/client-ca.pem' }]),
            ],
      )
      .withWaitStrategy(Wait.forLogMessage(/serving client traffic/))
      .withStartupTimeout(30_000);
    let started: StartedTestContainer;
    try {
      started = await container.start();
    } catch (error) {
      throw new Error(`etcd (${images.etcd}) did not start: ${(error as Error).message}`, { cause: error });
    }
    const server = new EtcdServer(started, clientPort, options);
    try {
      await server.untilHealthy();
      if (options.rootPassword !== undefined) await server.enableAuth(options.rootPassword);
    } catch (error) {
      await server.destroy();
      throw error;
    }
    return server;
  }

  get running(): boolean {
    return this.hostPid !== undefined;
  }

  /**
   * The running etcd's host process id, for a test that must kill it from outside this process's
   * event loop (at an exact moment, e.g. right after a write commits); `stop()` still waits for the exit.
   */
  get pid(): number | undefined {
    return this.hostPid;
  }

  /** Starts the stopped container again (same port, same data); resolves once it answers `/health`. */
  async start(): Promise<void> {
    if (this.hostPid !== undefined) return;
    await independentDocker().getContainer(this.container.getId()).start();
    await this.untilHealthy();
  }

  /**
   * Stops etcd and waits for it to exit. SIGTERM is a clean shutdown (`docker stop`); SIGKILL is a
   * crash (`docker kill`), and is faster, as etcd's clean shutdown waits a while for open watch
   * streams to end.
   */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const container = independentDocker().getContainer(this.container.getId());
    // Killed from outside (a test that kills `pid`), it may be dying still: the engine answers
    // 304 (stop) or 409 (kill) to a container that is no longer running.
    const stopped = signal === 'SIGKILL' ? container.kill({ signal: 'SIGKILL' }) : container.stop({ t: 10 });
    await stopped.catch((error: { statusCode?: number }) => {
      if (error.statusCode !== 304 && error.statusCode !== 409) throw error;
    });
    await container.wait({ condition: 'not-running' });
    this.hostPid = undefined;
  }

  /** The last lines etcd printed, for a message when something went wrong. */
  logs(): Promise<string> {
    return containerLogs(this.container, 30);
  }

  private async untilHealthy(): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!(await healthy(this.endpoint, this.options.tls))) {
      const state = (await independentDocker().getContainer(this.container.getId()).inspect()).State;
      if (!state.Running) throw new Error(`etcd exited before answering ${this.endpoint}/health:\n${await this.logs()}`);
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`etcd did not answer ${this.endpoint}/health within 15 s:\n${await this.logs()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    this.hostPid = await containerPid(this.container);
  }

  /** `etcdctl role add root; user add root; user grant-role root root; auth enable`, over the gateway. */
  private async enableAuth(password: string): Promise<void> {
    await this.gateway('/v3/auth/role/add', { name: 'root' });
    await this.gateway('/v3/auth/user/add', { name: 'root', password });
    await this.gateway('/v3/auth/user/grant', { user: 'root', role: 'root' });
    await this.gateway('/v3/auth/enable', {});
  }

  /** Removes etcd's container, and its data with it. */
  async destroy(): Promise<void> {
    this.hostPid = undefined;
    await removeContainer(this.container);
  }

  /** How many watchers etcd is serving now, from its metrics: two would mean a duplicate watch. */
  async watchers(): Promise<number> {
    const text = await (await fetch(`${this.endpoint}/metrics`)).text();
    const match = /^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text);
    if (match === null) throw new Error('etcd metrics: no etcd_debugging_mvcc_watcher_total');
    return Number(match[1]);
  }

  /** Calls etcd's JSON gateway (`/v3/...`), for what the etcd3 client does not expose. */
  async gateway(path: string, body: object): Promise<Record<string, unknown>> {
    const response = await fetch(`${this.endpoint}${path}`, { method: 'POST', body: JSON.stringify(body) });
    const json = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}: ${JSON.stringify(json)}`);
    return json;
  }
}

async function healthy(endpoint: string, tls: EtcdServerOptions['tls']): Promise<boolean> {
  if (tls !== undefined) return healthyOverTls(endpoint, tls);
  try {
    const response = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
    return response.ok;
  } catch {
    return false;
  }
}

/** fetch cannot be told which CA to trust (nor a client certificate): node's https can. */
function healthyOverTls(endpoint: string, tls: NonNullable<EtcdServerOptions['tls']>): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpsRequest(
      `${endpoint}/health`,
      { ca: tls.ca.cert, ...(tls.client === undefined ? {} : { cert: tls.client.cert, key: tls.client.key }), timeout: 1000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

/**
 * A loopback TCP port that is free now, chosen below the kernel's ephemeral range. Fault tests stop
 * a server and start it again on its port; a port from the ephemeral range could meanwhile become
 * the local end of some outgoing connection (even the stopped server's own client, reconnecting
 * to itself), and the restart would fail with "address already in use".
 */
export async function freePort(): Promise<number> {
  const [ephemeralLow] = ephemeralRange();
  const low = 20_000;
  const high = Math.max(low + 1000, ephemeralLow) - 1;
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free loopback port in ${low}-${high} after 50 tries`);
}

function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // not Linux: assume the usual range
  }
  return [32_768, 60_999];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
