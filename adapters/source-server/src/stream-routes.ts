import type { IncomingMessage } from 'node:http';
import {
  isKubeletError,
  podNameOf,
  type AgentView,
  type ContainerTarget,
  type PodTarget,
  type StreamOptions,
  type StreamSession,
} from '@kubelet-ts/core';
import { WebSocketServer, createWebSocketStream } from 'ws';
import { EXEC_PROTOCOLS, PORT_FORWARD_PROTOCOLS, joinForwards, joinSession, keepEarlyMessages } from './channel-streams.js';
import { flag } from './container-logs-route.js';
import { ForwardedConnections, type ForwardLimits } from './forwarded-connections.js';
import { acceptSpdyUpgrade, isSpdyUpgrade, negotiateStreamProtocol } from './spdy-session.js';
import {
  SPDY_EXEC_PROTOCOLS,
  SPDY_PORT_FORWARD_PROTOCOLS,
  TUNNELED_PORT_FORWARD_PROTOCOL,
  joinSpdySession,
  serveSpdyPortForward,
} from './spdy-streams.js';
import { HttpProblem, allow, decodePathSegment } from './http-kit.js';
import type { RouteAnswer, RouteHandler, UpgradeHandler } from './route-handler.js';

// The kubelet's paths: `/exec/{namespace}/{pod}/{container}` (and with the pod's uid before the
// container), `/portForward/{namespace}/{pod}[/{uid}]`, `/run/{namespace}/{pod}[/{uid}]/{container}`
// and 2014's `/run/{pod}/{container}`. A uid is taken and not checked: a pod has one on a node.
const EXEC = /^\/(exec|attach)\/([^/]+)\/([^/]+)\/(?:[^/]+\/)?([^/]+)$/;
const PORT_FORWARD = /^\/portForward\/([^/]+)\/([^/]+)(?:\/[^/]+)?$/;
const RUN = /^\/run\/([^/]+)\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/;

/** What `/run` gives back of a command's output at most (stdout, then stderr). */
const MAX_RUN_OUTPUT = 4 * 1024 * 1024;

const UPGRADE_REQUIRED =
  'this route streams over an upgraded connection: upgrade with the subprotocol v5.channel.k8s.io or v4.channel.k8s.io (WebSocket; SPDY/3.1+portforward.k8s.io tunnels a port-forward), or to SPDY/3.1 with the header X-Stream-Protocol-Version v4.channel.k8s.io (portforward.k8s.io for a port-forward)';

export type { ForwardLimits } from './forwarded-connections.js';

/** A streaming request, parsed and checked before anything runs. */
type StreamRequest =
  | { readonly kind: 'exec'; readonly target: ContainerTarget; readonly command: readonly string[]; readonly options: StreamOptions }
  | { readonly kind: 'attach'; readonly target: ContainerTarget; readonly options: StreamOptions }
  | { readonly kind: 'portForward'; readonly target: PodTarget; readonly ports: readonly number[] };

/** `portsInStreams`: a SPDY port-forward, whose ports come in its streams' headers (the query's are then optional). */
function streamRequest(url: URL, portsInStreams = false): StreamRequest | undefined {
  const exec = EXEC.exec(url.pathname);
  if (exec !== null) {
    const [kind, namespace, pod, container] = [exec[1]!, ...exec.slice(2, 5).map((s) => decodePathSegment(s!))] as [
      string,
      string,
      string,
      string,
    ];
    const target = { namespace, pod, container };
    const options = streamOptions(url.searchParams);
    if (kind === 'attach') return { kind: 'attach', target, options };
    const command = url.searchParams.getAll('command');
    if (command.length === 0 || command[0] === '') throw new HttpProblem(400, 'command: give the command to run, one command= per word');
    return { kind: 'exec', target, command, options };
  }
  const forward = PORT_FORWARD.exec(url.pathname);
  if (forward === null) return undefined;
  const [namespace, pod] = forward.slice(1, 3).map((s) => decodePathSegment(s!)) as [string, string];
  return { kind: 'portForward', target: { namespace, pod }, ports: portsOf(url.searchParams, !portsInStreams) };
}

/** The kubelet's rules: a terminal has no stderr of its own, and at least one stream is asked for. */
function streamOptions(query: URLSearchParams): StreamOptions {
  const tty = flag(query, 'tty');
  // The API server names them as the kubelet reads them (`input`, `output`, `error`); clients of the
  // agent's own port as the API server's pod routes do (`stdin`, `stdout`, `stderr`). Either is taken.
  const stdin = flag(query, 'stdin') || flag(query, 'input');
  const stdout = flag(query, 'stdout') || flag(query, 'output');
  const stderr = (flag(query, 'stderr') || flag(query, 'error')) && !tty;
  if (!stdin && !stdout && !stderr)
    throw new HttpProblem(400, 'ask for at least one of stdin, stdout, stderr (or input, output, error) =1');
  return { stdin, stdout, stderr, tty };
}

/**
 * The most ports one port-forward request may name: port *i* speaks on channels 2*i* and 2*i*+1,
 * and a channel number is one byte, so a 129th port would speak on the first port's channels.
 */
export const MAX_FORWARDED_PORTS = 128;

/** `ports=8080,9090` (the API server's form, also repeated) or the kubelet's `port=8080&port=9090`. */
function portsOf(query: URLSearchParams, required: boolean): number[] {
  const given = [...query.getAll('ports'), ...query.getAll('port')].flatMap((p) => p.split(','));
  if (given.length === 0 && !required) return [];
  if (given.length === 0) throw new HttpProblem(400, 'ports: give the port(s) to forward, ports=8080');
  if (given.length > MAX_FORWARDED_PORTS)
    throw new HttpProblem(
      400,
      `ports: ${given.length} ports named; one request forwards at most ${MAX_FORWARDED_PORTS}, as each takes two of the 256 one-byte channels`,
    );
  return given.map((p) => {
    const n = Number(p);
    if (!/^\d+$/.test(p) || n < 1 || n > 65535)
      throw new HttpProblem(400, `ports: ${JSON.stringify(p.slice(0, 20))} is not a port (1-65535)`);
    return n;
  });
}

/** The agent's refusals as HTTP: what is unknown 404, what does not run 400, what cannot stream 501. */
function problemOf(error: unknown): unknown {
  if (isKubeletError(error, 'NotFound')) return new HttpProblem(404, error.message);
  if (isKubeletError(error, 'Conflict')) return new HttpProblem(400, error.message);
  if (isKubeletError(error, 'Unsupported')) return new HttpProblem(501, error.message);
  return error;
}

/**
 * The streaming routes asked without an upgrade: `/exec`, `/attach` and `/portForward` answer 400
 * saying how to ask (WebSocket), and `POST /run/…?cmd=` runs the command and answers its output
 * (stdout, then stderr, as text; a non-zero exit is a 500 naming the code, with the output).
 */
export function streamingRouteHandler(view: AgentView): RouteHandler {
  return async (req, url): Promise<RouteAnswer | undefined> => {
    if (streamRequest(url) !== undefined) {
      allow(req, 'GET', 'POST');
      throw new HttpProblem(400, UPGRADE_REQUIRED);
    }
    const run = RUN.exec(url.pathname);
    if (run === null) return undefined;
    allow(req, 'POST');
    const parts = run
      .slice(1)
      .filter((s): s is string => s !== undefined)
      .map((s) => decodePathSegment(s));
    // 2014: /run/{pod}/{container}; now /run/{namespace}/{pod}[/{uid}]/{container}.
    const [namespace, pod] = parts.length === 2 ? ['default', parts[0]!] : [parts[0]!, parts[1]!];
    const target = { namespace, pod, container: parts[parts.length - 1]! };
    const command = (url.searchParams.get('cmd') ?? '').split(' ').filter((w) => w !== '');
    if (command.length === 0) throw new HttpProblem(400, 'cmd: give the command to run, words separated by spaces');
    let session: StreamSession;
    try {
      session = await view.exec(target, command, { stdin: false, stdout: true, stderr: true, tty: false });
    } catch (error) {
      throw problemOf(error);
    }
    req.once('close', () => session.close());
    const [stdout, stderr, end] = await Promise.all([collect(session.stdout), collect(session.stderr), session.done]);
    const output = Buffer.concat([stdout, stderr]).subarray(0, MAX_RUN_OUTPUT).toString('utf8');
    if (end.exitCode === 0) return { status: 200, text: output, contentType: 'text/plain; charset=utf-8' };
    const why = end.exitCode === undefined ? (end.message ?? 'ended without an exit code') : `exited with ${end.exitCode}`;
    return { status: 500, json: { error: `command ${JSON.stringify(command.join(' '))} ${why}`, exitCode: end.exitCode ?? null, output } };
  };
}

async function collect(stream: AsyncIterable<Buffer | string> | undefined): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (stream === undefined) return Buffer.alloc(0);
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (size < MAX_RUN_OUTPUT) chunks.push(bytes);
    size += bytes.length;
  }
  return Buffer.concat(chunks);
}

/** Refuses a port-forward to a pod this node does not have, before the handshake (404). */
async function checkPod(view: AgentView, target: PodTarget): Promise<void> {
  const { namespace, pod } = target;
  if (!(await view.pods()).some((p) => (p.namespace ?? 'default') === namespace && podNameOf(p.id, p.namespace) === pod))
    throw new HttpProblem(404, `pod ${JSON.stringify(`${namespace}/${pod}`)} does not exist on this node`);
}

/** Opens the exec or attach session a request asks for, its refusals as HTTP. */
async function openSession(view: AgentView, request: Exclude<StreamRequest, { kind: 'portForward' }>): Promise<StreamSession> {
  try {
    return request.kind === 'exec'
      ? await view.exec(request.target, request.command, request.options)
      : await view.attach(request.target, request.options);
  } catch (error) {
    throw problemOf(error);
  }
}

/**
 * The upgraded side of `/exec`, `/attach` and `/portForward`, three ways:
 * - `Upgrade: SPDY/3.1` (what the API server sends a node that does not declare
 *   `ExtendWebSocketsToKubelet`, and what older clients send): the protocol agreed by
 *   `X-Stream-Protocol-Version` (v4 to v1 of `channel.k8s.io`, `portforward.k8s.io`), then the
 *   client's streams (see `joinSpdySession`, `serveSpdyPortForward`); a port-forward's ports come
 *   from its streams' headers, not the query.
 * - A WebSocket for port-forward offering only `SPDY/3.1+portforward.k8s.io` (kubectl's, or the API
 *   server's when the node declares the feature): the same SPDY port-forward over the socket's bytes.
 * - Otherwise a WebSocket: the subprotocol chosen from those the client offers (v5, then v4, of
 *   `channel.k8s.io`; for port-forward v4 or `portforward.k8s.io`), then joined to the socket (see
 *   `joinSession`, `joinForwards`).
 * Either way an exec or attach session is opened before the handshake (so what is unknown or not
 * running is a plain HTTP answer), and forwarded connections count against the same
 * `maxForwardedConnections`. False for a path that is not one of them.
 */
export function streamingUpgradeHandler(view: AgentView, limits: ForwardLimits = {}): UpgradeHandler {
  const forwards = new ForwardedConnections(limits);
  const chosen = new WeakMap<IncomingMessage, string>();
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: 4 * 1024 * 1024,
    handleProtocols: (_offered, req) => chosen.get(req) ?? false,
  });
  const tunnelled = new WeakSet<IncomingMessage>();
  server.on('headers', (headers: string[], req: IncomingMessage) => {
    if (tunnelled.has(req)) headers.push(`Sec-WebSocket-Protocol: ${TUNNELED_PORT_FORWARD_PROTOCOL}`);
  });
  const spdyLimits = limits.dialsAtOnce === undefined ? {} : { dialsAtOnce: limits.dialsAtOnce };
  const dialOne = (target: PodTarget) => async (port: number, gone: Promise<void>) =>
    (await forwards.dial(view, target, [port], gone))?.[0];
  return async (req, url, socket, head) => {
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    const spdy = isSpdyUpgrade(req);
    const tunnel = !spdy && offered.includes(TUNNELED_PORT_FORWARD_PROTOCOL) && !PORT_FORWARD_PROTOCOLS.some((p) => offered.includes(p));
    const request = streamRequest(url, spdy || tunnel);
    if (request === undefined) return false;
    allow(req, 'GET', 'POST');
    if (spdy) {
      if (request.kind === 'portForward') {
        const protocol = negotiateStreamProtocol(req, SPDY_PORT_FORWARD_PROTOCOLS);
        await checkPod(view, request.target);
        if (socket.destroyed) return true;
        acceptSpdyUpgrade(socket, protocol);
        serveSpdyPortForward(socket, head, dialOne(request.target), spdyLimits);
        return true;
      }
      const protocol = negotiateStreamProtocol(req, SPDY_EXEC_PROTOCOLS);
      const session = await openSession(view, request);
      if (socket.destroyed) {
        session.close();
        return true;
      }
      acceptSpdyUpgrade(socket, protocol);
      void joinSpdySession(socket, head, session, protocol, request.kind === 'exec' ? request.command : undefined, request.options);
      return true;
    }
    const served: readonly string[] =
      request.kind === 'portForward' ? [...PORT_FORWARD_PROTOCOLS, TUNNELED_PORT_FORWARD_PROTOCOL] : EXEC_PROTOCOLS;
    const protocol = served.find((p) => offered.includes(p));
    if (protocol === undefined)
      throw new HttpProblem(
        400,
        `offer one of the subprotocols ${served.join(', ')} (offered: ${offered.filter((p) => p !== '').join(', ') || 'none'})`,
      );
    chosen.set(req, protocol);
    if (request.kind === 'portForward') {
      await checkPod(view, request.target);
      if (protocol === TUNNELED_PORT_FORWARD_PROTOCOL) {
        // `ws` refuses the offer (a '/' is not allowed in a subprotocol token, RFC 6455), which
        // client-go sends all the same: it is taken off the request and answered in the headers.
        delete req.headers['sec-websocket-protocol'];
        tunnelled.add(req);
        server.handleUpgrade(req, socket, head, (ws) => {
          // SPDY in the socket's binary messages: a byte stream, no channel byte.
          const bytes = createWebSocketStream(ws);
          bytes.on('error', () => bytes.destroy());
          serveSpdyPortForward(bytes, undefined, dialOne(request.target), spdyLimits);
        });
        return true;
      }
      // Connected after the handshake, as the kubelet does: a port that refuses says so on its error channel.
      server.handleUpgrade(req, socket, head, (ws) => {
        // What the client sends before the connections are made is kept for them (joinForwards).
        const early = keepEarlyMessages(ws);
        const gone = new Promise<void>((resolve) => ws.once('close', () => resolve()));
        void forwards.dial(view, request.target, request.ports, gone).then((made) => {
          if (made !== undefined && ws.readyState === ws.OPEN) void joinForwards(ws, made, early.take());
        });
      });
      return true;
    }
    const session = await openSession(view, request);
    if (socket.destroyed) {
      session.close();
      return true;
    }
    server.handleUpgrade(req, socket, head, (ws) => {
      void joinSession(ws, session, protocol, request.kind === 'exec' ? request.command : undefined);
    });
    return true;
  };
}
