import { KubeletError } from '@kubelet-ts/core';
import WebSocket from 'ws';
import { ADAPTER } from './errors.js';

/**
 * The subprotocol spoken with the runtime's streaming server (the k8s streaming library that
 * containerd and CRI-O embed): each binary message starts with its channel's number. containerd
 * 1.6 offers `v4.channel.k8s.io` at most, not v5 (whose channel 255 closes one channel): over a
 * WebSocket, a client cannot close its side of a channel alone (see `CriStreamSession.stdin`).
 */
export const CHANNEL_PROTOCOL = 'v4.channel.k8s.io';

/** One message on `channel`. */
export function frame(channel: number, data: Uint8Array = Buffer.alloc(0)): Buffer {
  const message = Buffer.allocUnsafe(data.length + 1);
  message[0] = channel;
  message.set(data, 1);
  return message;
}

/** An open connection to the runtime's streaming server, whose messages wait for their reader. */
export interface OpenStream {
  readonly ws: WebSocket;
  /**
   * Gives `onMessage` what came since the connection opened, then what comes; calls `onClose` once
   * it is closed (at once, if it already is). The server speaks first, and its first messages can
   * arrive with the handshake, before whoever asked for the connection has it in hand.
   */
  listen(onMessage: (data: Buffer) => void, onClose: () => void): void;
}

/**
 * Connects to a URL the runtime gave (`Exec`, `Attach`, `PortForward`: good for one connection,
 * for a minute or so); rejects with `Unavailable` when the server refuses or does not answer.
 */
export function openStream(url: string, what: string, timeoutMs: number): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, [CHANNEL_PROTOCOL], { handshakeTimeout: timeoutMs, perMessageDeflate: false });
    const early: Buffer[] = [];
    let closed = false;
    const keep = (data: Buffer) => early.push(data);
    ws.on('message', keep).once('close', () => (closed = true));
    const listen = (onMessage: (data: Buffer) => void, onClose: () => void) => {
      ws.off('message', keep);
      for (const data of early.splice(0)) onMessage(data);
      ws.on('message', onMessage);
      if (closed) onClose();
      else ws.once('close', onClose);
    };
    const settled = () => {
      ws.off('open', opened).off('unexpected-response', refused).off('error', failed);
      // Failures from here on end the session (its 'close'), which is what its owner waits on.
      ws.on('error', () => {});
    };
    const fail = (why: string, cause?: unknown) => {
      settled();
      ws.terminate();
      reject(new KubeletError('Unavailable', `${what}: the runtime's streaming server at ${url} ${why}`, { adapter: ADAPTER, cause }));
    };
    const opened = () => {
      settled();
      resolve({ ws, listen });
    };
    const refused = (_request: unknown, response: { statusCode?: number; statusMessage?: string }) =>
      fail(`answered ${response.statusCode ?? '?'} ${response.statusMessage ?? ''}`.trim());
    const failed = (error: Error) => fail(`cannot be reached (${error.message})`, error);
    ws.on('open', opened).on('unexpected-response', refused).on('error', failed);
  });
}

let pings = 0;

/**
 * Sends a ping after what was sent before it, and resolves once its pong is back (`true`), or the
 * connection closed or `timeoutMs` passed first (`false`). The server answers a ping from the loop
 * that reads the connection, in order: a pong means it has taken in everything sent before the
 * ping. (That loop waits while the process does not read its stdin: hence the bound.)
 */
export function roundTrip(ws: WebSocket, timeoutMs: number): Promise<boolean> {
  if (ws.readyState !== WebSocket.OPEN) return Promise.resolve(false);
  const payload = Buffer.from(`kubelet-ts ${(pings += 1)}`);
  return new Promise((resolve) => {
    const onPong = (data: Buffer) => {
      if (payload.equals(data)) settle(true);
    };
    const onClose = () => settle(false);
    const timer = setTimeout(() => settle(false), timeoutMs);
    const settle = (answered: boolean) => {
      clearTimeout(timer);
      ws.off('pong', onPong).off('close', onClose);
      resolve(answered);
    };
    ws.on('pong', onPong).on('close', onClose);
    ws.ping(payload);
  });
}
