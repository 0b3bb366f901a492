import { spawn } from 'node:child_process';
import WebSocket from 'ws';
import { ms } from '../stats.js';

/**
 * The clients of the streaming rows: `ws` itself speaking the Kubernetes channel protocol to the
 * agent (each binary message one channel byte, then the bytes), as kubectl and client-node do, and
 * a plain TCP client inside the pod's network namespace for the direct baseline.
 */
export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const PORT_FORWARD_PROTOCOLS = ['v4.channel.k8s.io'];

/** How a session on the channel protocol ended: what came on stdout (channel 1), and the status (channel 3). */
export interface ChannelSession {
  readonly ms: number;
  readonly stdout: string;
  /** The metav1.Status's `status` (`Success`, `Failure`), if one came. */
  readonly status: string | undefined;
  readonly protocol: string;
}

function frame(channel: number, data: Buffer | string): Buffer {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  return Buffer.concat([Buffer.from([channel]), bytes]);
}

/**
 * Opens `url` offering `protocols`, its listeners on from the start (so that nothing the server
 * sends with its handshake is missed), and rejects on a refused upgrade, with what the server said.
 */
function connect(url: string, protocols: readonly string[], onMessage: (channel: number, data: Buffer) => void): WebSocket {
  const ws = new WebSocket(url, [...protocols], { perMessageDeflate: false });
  // A failure is also a close, which is what the callers wait on; a second one is not thrown.
  ws.on('error', () => undefined);
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary && data.length > 0) onMessage(data[0]!, data.subarray(1));
  });
  ws.once('unexpected-response', (req, res) => {
    let said = '';
    res.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    res.once('end', () => {
      req.destroy();
      ws.emit('error', new Error(`${new URL(url).pathname}: HTTP ${res.statusCode}: ${said.slice(0, 200)}`));
    });
  });
  return ws;
}

/**
 * One session on the channel protocol, from opening the socket to the server's close: an exec
 * through the agent (v5, else v4), or straight on the runtime's streaming server (v4).
 */
export function channelSession(url: string, protocols: readonly string[] = EXEC_PROTOCOLS, timeoutMs = 60_000): Promise<ChannelSession> {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    let stdout = '';
    let status = '';
    const ws = connect(url, protocols, (channel, data) => {
      if (channel === 1) stdout += data.toString('utf8');
      else if (channel === 3) status += data.toString('utf8');
    });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`${new URL(url).pathname}: not over within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    ws.once('error', (error) => {
      clearTimeout(timer);
      ws.terminate();
      reject(error);
    });
    ws.once('close', () => {
      clearTimeout(timer);
      const took = ms(t);
      let said: string | undefined;
      try {
        said = status === '' ? undefined : String((JSON.parse(status) as { status?: unknown }).status);
      } catch {
        said = `not JSON: ${status.slice(0, 100)}`;
      }
      resolve({ ms: took, stdout, status: said, protocol: ws.protocol });
    });
  });
}

/**
 * One forwarded connection through the agent's `/portForward` (one port: data on channel 0, errors
 * on channel 1, each opened by the port as 2 bytes little-endian). `open` resolves once the data
 * channel's opening message came: the agent sends it once it has connected to the port and
 * listens to the socket, so what is sent before it may be lost.
 */
export class ForwardedConnection {
  /** Bytes received on the data channel (after its opening message). */
  received = 0;
  /** What came on the error channel after its opening message. */
  error = '';
  readonly closed: Promise<void>;
  private onData: (chunk: Buffer) => void = () => undefined;
  private readonly ws: WebSocket;

  private constructor(url: string, opened: (error?: Error) => void) {
    const preamble = [true, true];
    this.ws = connect(url, PORT_FORWARD_PROTOCOLS, (channel, body) => {
      if (channel !== 0 && channel !== 1) return;
      if (preamble[channel]) {
        preamble[channel] = false;
        if (channel === 0) opened();
        return;
      }
      if (channel === 1) this.error += body.toString('utf8');
      else {
        this.received += body.length;
        this.onData(body);
      }
    });
    this.closed = new Promise((resolve) => this.ws.once('close', () => resolve()));
    this.ws.once('error', (error) => opened(error));
    this.ws.once('close', () => opened(new Error(`closed before its data channel opened${this.error === '' ? '' : `: ${this.error}`}`)));
  }

  static open(url: string, timeoutMs = 60_000): Promise<ForwardedConnection> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => opened(new Error(`not open within ${timeoutMs / 1000} s`)), timeoutMs);
      const opened = (error?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error === undefined) return resolve(connection);
        connection.ws.terminate();
        reject(error);
      };
      const connection = new ForwardedConnection(url, opened);
    });
  }

  /** Calls `onData` with what arrives on the data channel from now on. */
  listen(onData: (chunk: Buffer) => void): void {
    this.onData = onData;
  }

  /** Sends `total` bytes (zeros) on the data channel in messages of `chunk` bytes, `inFlight` at most unwritten. */
  push(total: number, chunk = 1_000_000, inFlight = 8): Promise<void> {
    const full = frame(0, Buffer.alloc(chunk));
    let left = total;
    let waiting = 0;
    return new Promise((resolve, reject) => {
      const more = () => {
        while (left > 0 && waiting < inFlight) {
          const n = Math.min(left, chunk);
          left -= n;
          waiting += 1;
          this.ws.send(n === chunk ? full : full.subarray(0, n + 1), { binary: true }, (error) => {
            waiting -= 1;
            if (error !== undefined && error !== null) return reject(error);
            if (left === 0 && waiting === 0) resolve();
            else more();
          });
        }
      };
      more();
    });
  }

  /** Sends `text` on the data channel. */
  send(text: string): void {
    this.ws.send(frame(0, text), { binary: true });
  }

  close(): Promise<void> {
    this.ws.close(1000);
    return this.closed;
  }

  /** Closes the socket at once, after `ms` (a transfer that takes longer fails); `clearTimeout` the answer to call it off. */
  closeAfter(ms: number): NodeJS.Timeout {
    return setTimeout(() => this.ws.terminate(), ms);
  }
}

/** How a download through `/portForward` went: the ms to its last byte, and whether the agent then closed the socket. */
export interface Download {
  readonly ms: number;
  /** ms from the last byte to the agent's close, if it closed within CLOSE_WAIT_MS. */
  readonly closedAfterMs: number | undefined;
}

/** How long a download waits, after its last byte, for the agent to close the socket (the pod's server closed its end). */
export const CLOSE_WAIT_MS = 2_000;
/** A transfer (either way) that takes longer fails. */
const TRANSFER_MS = 600_000;

/**
 * A download through `/portForward`: from opening the socket to the last of `bytes` (the server in
 * the pod sends them and closes), then up to CLOSE_WAIT_MS for the agent to close the socket too.
 */
export async function forwardDownload(url: string, bytes: number): Promise<Download> {
  const t = process.hrtime.bigint();
  const connection = await ForwardedConnection.open(url);
  const timer = connection.closeAfter(TRANSFER_MS);
  const all = new Promise<void>((resolve) => connection.listen(() => connection.received >= bytes && resolve()));
  const short = connection.closed.then(() => {
    throw new Error(
      `port-forward download: ${connection.received} bytes before the close, not ${bytes}${connection.error === '' ? '' : `: ${connection.error}`}`,
    );
  });
  await Promise.race([all, short]).finally(() => clearTimeout(timer));
  const took = ms(t);
  if (connection.received !== bytes) throw new Error(`port-forward download: ${connection.received} bytes, not ${bytes}`);
  const last = process.hrtime.bigint();
  const closed = await Promise.race([
    connection.closed.then(() => true),
    new Promise<false>((r) => setTimeout(() => r(false), CLOSE_WAIT_MS)),
  ]);
  const closedAfterMs = closed ? ms(last) : undefined;
  if (!closed) await connection.close();
  return { ms: took, closedAfterMs };
}

/** An upload through `/portForward`: from opening the socket to the sink's `ok` (it read `bytes`). */
export async function forwardUpload(url: string, bytes: number): Promise<number> {
  const t = process.hrtime.bigint();
  const connection = await ForwardedConnection.open(url);
  const timer = connection.closeAfter(TRANSFER_MS);
  let said = '';
  const ok = new Promise<void>((resolve) =>
    connection.listen((chunk) => {
      said += chunk.toString('utf8');
      if (said.includes('ok')) resolve();
    }),
  );
  const ended = connection.closed.then(() => {
    throw new Error(`port-forward upload: closed before the sink said ok${connection.error === '' ? '' : `: ${connection.error}`}`);
  });
  await Promise.race([Promise.all([connection.push(bytes), ok]), ended]).finally(() => clearTimeout(timer));
  const took = ms(t);
  await connection.close();
  return took;
}

// The direct client, run in the pod's network namespace: connects to the port on loopback and
// downloads to the end, or uploads `bytes` and waits for the sink's `ok`; says `{ ms, bytes }`,
// timed from its connect to the end (its own start is not counted).
const DIRECT = `
const net = require('node:net');
const [mode, port, bytes] = process.argv.slice(1);
const t = process.hrtime.bigint();
const socket = net.connect({ port: Number(port), host: '127.0.0.1' });
let got = 0;
let said = '';
const done = () => {
  process.stdout.write(JSON.stringify({ ms: Number(process.hrtime.bigint() - t) / 1e6, bytes: got }) + '\\n');
  process.exit(0);
};
socket.on('error', (e) => { process.stderr.write(String(e) + '\\n'); process.exit(1); });
if (mode === 'download') {
  socket.on('data', (c) => (got += c.length));
  socket.on('end', done);
} else {
  socket.on('data', (c) => { said += c; if (said.includes('ok')) { got = Number(bytes); done(); } });
  socket.once('connect', () => {
    const chunk = Buffer.alloc(1e6);
    let left = Number(bytes);
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void socket.once('drain', pump);
      }
    };
    pump();
  });
}
`;

/**
 * The direct baseline: a TCP connection to the pod's port on loopback in the pod's own network
 * namespace (entered with nsenter), the same server and no hop: the ms of the transfer.
 */
export function directTransfer(pid: number, port: number, mode: 'download' | 'upload', bytes: number): Promise<number> {
  const child = spawn(
    'nsenter',
    ['--target', String(pid), '--net', '--', process.execPath, '-e', DIRECT, mode, String(port), String(bytes)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), TRANSFER_MS);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`direct ${mode} in the pod's namespace exited with ${code}: ${err.trim()}`));
      const said = JSON.parse(out) as { ms: number; bytes: number };
      if (said.bytes !== bytes) return reject(new Error(`direct ${mode}: ${said.bytes} bytes, not ${bytes}`));
      resolve(said.ms);
    });
  });
}
