import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

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
 * A real etcd (Debian's etcd-server) of this test's own, on free loopback ports with a temp data dir. Fault tests stop it
 * and start it again on the same ports and data, which is "etcd went down and came back" to a
 * client; the etcd that `npm test` starts is never touched.
 */
export class EtcdServer {
  readonly endpoint: string;
  private process: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  /** The last lines etcd printed, for the message when it does not come up. */
  private readonly log: string[] = [];

  private constructor(
    private readonly binary: string,
    private readonly dataDir: string,
    clientPort: number,
    private readonly peerPort: number,
    private readonly options: EtcdServerOptions = {},
  ) {
    this.endpoint = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${clientPort}`;
  }

  /** Spawns a fresh etcd and resolves once it answers `/health` (and has auth on, if asked). */
  static async launch(options: EtcdServerOptions = {}): Promise<EtcdServer> {
    const binary = findEtcd();
    const dataDir = await mkdtemp(join(tmpdir(), 'kubelet-ts-etcd-'));
    const server = new EtcdServer(binary, dataDir, await freePort(), await freePort(), options);
    try {
      await server.start();
      if (options.rootPassword !== undefined) await server.enableAuth(options.rootPassword);
    } catch (error) {
      await server.destroy();
      throw error;
    }
    return server;
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  /**
   * The running etcd's process id, for a test that must kill it from outside this process's event
   * loop (at an exact moment, e.g. right after a write commits); `stop()` still waits for the exit.
   */
  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** Starts etcd again on the same ports and data dir; resolves once it answers `/health`. */
  async start(): Promise<void> {
    if (this.process !== undefined) return;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const child = spawn(
      this.binary,
      [
        '--name',
        'test',
        '--data-dir',
        this.dataDir,
        '--listen-client-urls',
        this.endpoint,
        '--advertise-client-urls',
        this.endpoint,
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
        '--log-level',
        'warn',
        ...this.tlsArgs(),
        ...(this.options.maxTxnOps === undefined ? [] : ['--max-txn-ops', String(this.options.maxTxnOps)]),
        ...(this.options.maxRequestBytes === undefined ? [] : ['--max-request-bytes', String(this.options.maxRequestBytes)]),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process = child;
    const keep = (chunk: Buffer) => {
      this.log.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      this.log.splice(0, Math.max(0, this.log.length - 30));
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    let gone = false;
    void this.exited.then(() => {
      gone = true;
      if (this.process === child) this.process = undefined;
    });
    const deadline = Date.now() + 15_000;
    while (!(await healthy(this.endpoint, this.options.tls))) {
      if (gone) throw new Error(`etcd exited before answering ${this.endpoint}/health:\n${this.log.join('\n')}`);
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`etcd did not answer ${this.endpoint}/health within 15 s:\n${this.log.join('\n')}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Stops etcd and waits for it to exit. SIGTERM is a clean shutdown; SIGKILL is a crash, and is
   * faster, as etcd's clean shutdown waits a while for open watch streams to end.
   */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.process;
    if (child === undefined) return;
    child.kill(signal);
    const forced = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(forced);
    this.process = undefined;
  }

  private tlsArgs(): string[] {
    const tls = this.options.tls;
    if (tls === undefined) return [];
    return [
      '--cert-file',
      tls.server.certFile,
      '--key-file',
      tls.server.keyFile,
      ...(tls.clientCa === undefined ? [] : ['--client-cert-auth', '--trusted-ca-file', tls.clientCa.certFile]),
    ];
  }

  /** `etcdctl role add root; user add root; user grant-role root root; auth enable`, over the gateway. */
  private async enableAuth(password: string): Promise<void> {
    await this.gateway('/v3/auth/role/add', { name: 'root' });
    await this.gateway('/v3/auth/user/add', { name: 'root', password });
    await this.gateway('/v3/auth/user/grant', { user: 'root', role: 'root' });
    await this.gateway('/v3/auth/enable', {});
  }

  /** Stops etcd and removes its data dir. */
  async destroy(): Promise<void> {
    await this.stop('SIGKILL');
    await rm(this.dataDir, { recursive: true, force: true });
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

function findEtcd(): string {
  const candidates = [
    '/usr/bin/etcd',
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'etcd')),
  ];
  const found = candidates.find((path) => existsSync(path));
  if (found === undefined) {
    throw new Error('no etcd binary at /usr/bin/etcd or on PATH: apt-get install -y etcd-server; npm test installs it');
  }
  return found;
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
