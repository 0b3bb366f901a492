import type { Duplex, Readable } from 'node:stream';
import type { SessionEnd, StreamSession } from '@kubelet-ts/core';
import type { WebSocket } from 'ws';

/**
 * The Kubernetes streaming channels over WebSocket (`k8s.io/apimachinery` `wsstream`, the
 * kubelet's `remotecommand` and `portforward`): each binary message is one byte naming its
 * channel, then the bytes.
 */
export const Channel = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;

/** The subprotocols served, in the order the server prefers them. */
export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;
export const PORT_FORWARD_PROTOCOLS = ['v4.channel.k8s.io', 'portforward.k8s.io'] as const;

/** Messages sent and not yet written to the socket before a stream is paused: the bound of what a slow client makes the agent hold. */
const HIGH_WATER = 16;

function frame(channel: number, data: Buffer | string): Buffer {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const out = Buffer.allocUnsafe(bytes.length + 1);
  out[0] = channel;
  bytes.copy(out, 1);
  return out;
}

/**
 * Sends what `from` gives on `channel`, pausing it while HIGH_WATER messages wait to be written (a
 * slow client slows the process's output, never grows the agent's memory). Resolves when it ended.
 */
function relay(from: Readable | Duplex, ws: WebSocket, channel: number): Promise<void> {
  return new Promise((resolve) => {
    let waiting = 0;
    from.on('data', (chunk: Buffer | string) => {
      if (ws.readyState !== ws.OPEN) return;
      waiting += 1;
      ws.send(frame(channel, chunk), { binary: true }, () => {
        waiting -= 1;
        if (waiting < HIGH_WATER && from.isPaused()) from.resume();
      });
      if (waiting >= HIGH_WATER) from.pause();
    });
    from
      .once('end', resolve)
      .once('close', resolve)
      .once('error', () => resolve());
  });
}

/**
 * The metav1.Status the kubelet writes on the error channel when a session ends: `Success`, or a
 * `NonZeroExitCode` failure with the code as its `ExitCode` cause, or the runtime's message.
 */
export function endStatus(end: SessionEnd, command: readonly string[] | undefined): Record<string, unknown> {
  const { exitCode, message } = end;
  if (exitCode === 0 || (exitCode === undefined && message === undefined)) return { metadata: {}, status: 'Success' };
  if (exitCode === undefined) return { metadata: {}, status: 'Failure', message, reason: 'InternalError' };
  const what = command === undefined ? 'the container' : `command ${JSON.stringify(command.join(' '))}`;
  return {
    metadata: {},
    status: 'Failure',
    message: `${what} terminated with non-zero exit code ${exitCode}${message === undefined ? '' : `: ${message}`}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

/**
 * Joins an exec or attach session to a WebSocket speaking `protocol` (v5 or v4 of
 * `channel.k8s.io`): stdin from channel 0 (its end from v5's close message `[255, 0]`, or the
 * socket's close), resizes from channel 4, stdout and stderr to channels 1 and 2, and once the
 * session is over and its output sent, its status on channel 3 and a normal close. The client
 * leaving closes the session.
 */
export function joinSession(
  ws: WebSocket,
  session: StreamSession,
  protocol: string,
  command: readonly string[] | undefined,
): Promise<void> {
  const v5 = protocol === 'v5.channel.k8s.io';
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length === 0) return;
    const payload = data.subarray(1);
    switch (data[0]) {
      case Channel.stdin: {
        const stdin = session.stdin;
        if (stdin === undefined || stdin.writableEnded || payload.length === 0) return;
        if (!stdin.write(payload)) {
          ws.pause();
          stdin.once('drain', () => ws.resume());
        }
        return;
      }
      case Channel.resize:
        try {
          const size = JSON.parse(payload.toString('utf8')) as { Width?: unknown; Height?: unknown };
          if (typeof size.Width === 'number' && typeof size.Height === 'number')
            void session.resize({ width: size.Width, height: size.Height }).catch(() => undefined);
        } catch {
          // A size that is not JSON is dropped, as the kubelet drops it.
        }
        return;
      case Channel.close:
        if (v5 && payload[0] === Channel.stdin) session.stdin?.end();
        return;
      default:
        return;
    }
  });
  ws.once('close', () => session.close());
  const outputs = [
    session.stdout === undefined ? Promise.resolve() : relay(session.stdout, ws, Channel.stdout),
    session.stderr === undefined ? Promise.resolve() : relay(session.stderr, ws, Channel.stderr),
  ];
  return (async () => {
    const end = await session.done;
    await Promise.all(outputs);
    if (ws.readyState === ws.OPEN) {
      ws.send(frame(Channel.error, JSON.stringify(endStatus(end, command))), { binary: true });
      ws.close(1000);
    }
  })();
}

/** A message a client sent before its session's connections were made. */
export interface EarlyMessage {
  readonly data: Buffer;
  readonly isBinary: boolean;
}

/**
 * Keeps what a client sends while its session is being set up (its ports dialled), so that its
 * leaving is seen meanwhile (a paused socket reads no close frame); past `maxBytes` the socket is
 * paused, so a client cannot make the agent hold more. `take()` stops keeping and gives what was kept.
 */
export function keepEarlyMessages(ws: WebSocket, maxBytes = 1024 * 1024): { take(): EarlyMessage[] } {
  const kept: EarlyMessage[] = [];
  let bytes = 0;
  const keep = (data: Buffer, isBinary: boolean) => {
    kept.push({ data, isBinary });
    bytes += data.length;
    if (bytes > maxBytes) ws.pause();
  };
  ws.on('message', keep);
  return {
    take() {
      ws.off('message', keep);
      return kept;
    },
  };
}

/** One forwarded port of a port-forward session: the connection, or why there is none. */
export type Forward = { readonly port: number } & ({ readonly connection: Duplex } | { readonly error: string });

/**
 * Joins forwarded connections to a WebSocket (the kubelet's `portforward` over WebSocket): port i
 * has data channel 2i and error channel 2i+1, and the first message on each is the port as two
 * bytes, little-endian. What the client sends on a data channel goes to its connection and back;
 * a connection that failed says why on its error channel. The socket closes once every connection
 * has ended; the client leaving ends them all.
 */
export function joinForwards(ws: WebSocket, forwards: readonly Forward[], early: readonly EarlyMessage[] = []): Promise<void> {
  for (const [i, forward] of forwards.entries()) {
    const port = Buffer.alloc(2);
    port.writeUInt16LE(forward.port);
    ws.send(frame(2 * i, port), { binary: true });
    ws.send(frame(2 * i + 1, port), { binary: true });
    if ('error' in forward) ws.send(frame(2 * i + 1, forward.error), { binary: true });
  }
  const connections = forwards.map((f) => ('connection' in f ? f.connection : undefined));
  const onMessage = (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length === 0 || data[0]! % 2 !== 0) return;
    const connection = connections[data[0]! / 2];
    if (connection === undefined || connection.writableEnded) return;
    if (!connection.write(data.subarray(1))) {
      ws.pause();
      connection.once('drain', () => ws.resume());
    }
  };
  for (const { data, isBinary } of early) onMessage(data, isBinary);
  ws.on('message', onMessage);
  ws.once('close', () => {
    for (const c of connections) c?.destroy();
  });
  ws.resume();
  const relays = connections.map((c, i) => {
    if (c === undefined) return Promise.resolve();
    c.on('error', (error: Error) => {
      if (ws.readyState === ws.OPEN)
        ws.send(frame(2 * i + 1, `error forwarding port ${forwards[i]!.port}: ${error.message}`), { binary: true });
    });
    return relay(c, ws, 2 * i);
  });
  return Promise.all(relays).then(() => {
    if (ws.readyState === ws.OPEN) ws.close(1000);
  });
}
