import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { AgentClientError, type AgentClient } from './agent-client.js';
import { addConnectionOptions, openAgent, type ConnectionOptions } from './connection.js';

/** Where `kubelet-ts port-forward` writes, its environment, and what stops it (SIGINT by default). */
export interface PortForwardIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stopped: Promise<unknown>;
}

interface PortForwardOptions extends ConnectionOptions {
  readonly address: string;
}

/** `LOCAL:REMOTE`, `REMOTE` (the same port locally) or `:REMOTE` (any free local port), as kubectl takes them. */
function mapping(value: string, previous: Array<{ local: number; remote: number }> = []): Array<{ local: number; remote: number }> {
  const match = /^(\d*):(\d+)$|^(\d+)$/.exec(value.trim());
  const port = (text: string, min: number) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > 65535) throw new InvalidArgumentError(`${JSON.stringify(value)}: ${text} is not a port`);
    return n;
  };
  if (match === null) throw new InvalidArgumentError(`${JSON.stringify(value)}: give LOCAL:REMOTE, REMOTE or :REMOTE`);
  const remote = port(match[2] ?? match[3]!, 1);
  const local = match[3] !== undefined ? remote : match[1] === '' ? 0 : port(match[1]!, 0);
  return [...previous, { local, remote }];
}

/** `kubelet-ts port-forward`'s arguments and options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function portForwardProgram(): Command {
  return addConnectionOptions(new Command('kubelet-ts port-forward'))
    .description("forward local ports to a pod's ports, through a running agent (as kubectl port-forward)")
    .argument('<pod>', "the pod's name, as the agent's /pods shows it")
    .argument('<ports...>', 'LOCAL:REMOTE, REMOTE, or :REMOTE for any free local port')
    .addOption(new Option('--address <address>', 'the local address to listen on').default('127.0.0.1'));
}

/**
 * `kubelet-ts port-forward POD [LOCAL:]REMOTE…`, as `kubectl port-forward` is used: listens on
 * `--address` (127.0.0.1) and carries each connection it takes to the pod's port through a
 * running agent's `/portForward` (one WebSocket per connection), until stopped. A connection the
 * pod refuses is closed and why is said on stderr. The pod is looked up first, as kubectl does, so
 * that a missing pod, an agent out of reach or refused credentials end it before it listens. Exits
 * 0 when stopped, else with the client commands' code (`ExitCodes`: 1, or 2-4 for an agent
 * unreachable, credentials refused, TLS failed).
 */
export async function portForwardMain(argv: readonly string[], io: PortForwardIo): Promise<number> {
  const program = portForwardProgram()
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
  let ports: Array<{ local: number; remote: number }>;
  try {
    program.parse([...argv], { from: 'user' });
    ports = program.args.slice(1).reduce<Array<{ local: number; remote: number }>>((all, p) => mapping(p, all), []);
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1;
    if (error instanceof InvalidArgumentError) {
      io.stderr.write(`kubelet-ts port-forward: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  const pod = program.args[0]!;
  const options = program.opts<PortForwardOptions>();
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  try {
    const { client, namespace } = await openAgent(options, io.env);
    const list = (await client.json('/pods')) as { items?: Array<{ metadata?: { name?: string; namespace?: string } }> };
    if (!(list.items ?? []).some((p) => p.metadata?.name === pod && (p.metadata.namespace ?? 'default') === namespace))
      throw new AgentClientError(`pod "${namespace}/${pod}" is not on this agent (see kubelet-ts get pods)`);
    const path = (remote: number) => `/portForward/${encodeURIComponent(namespace)}/${encodeURIComponent(pod)}?ports=${remote}`;
    for (const { local, remote } of ports) {
      const server = createServer((socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        void forward(client, path(remote), socket, io);
      });
      servers.push(server);
      server.listen(local, options.address);
      await Promise.race([once(server, 'listening'), once(server, 'error').then(([e]) => Promise.reject(e as Error))]);
      const bound = server.address();
      const port = typeof bound === 'object' && bound !== null ? bound.port : local;
      io.stdout.write(`Forwarding from ${options.address}:${port} -> ${remote}\n`);
    }
    await io.stopped;
    return 0;
  } catch (error) {
    if (!(error instanceof AgentClientError) && (error as NodeJS.ErrnoException).code === undefined) throw error;
    io.stderr.write(`kubelet-ts port-forward: ${(error as Error).message}\n`);
    // A local port that cannot be listened on is a plain 1; the agent's failures have their own codes.
    return error instanceof AgentClientError ? error.exitCode : 1;
  } finally {
    for (const socket of sockets) socket.destroy();
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/** One local connection carried over one WebSocket: data channel 0 both ways, channel 1 says why it failed; each channel's first two bytes are the port. */
async function forward(client: AgentClient, path: string, socket: Socket, io: PortForwardIo): Promise<void> {
  let ws: Awaited<ReturnType<AgentClient['websocket']>>;
  try {
    ws = await client.websocket(path, ['v4.channel.k8s.io']);
  } catch (error) {
    io.stderr.write(`kubelet-ts port-forward: ${(error as Error).message}\n`);
    socket.destroy();
    return;
  }
  const prefixed = new Set<number>();
  ws.on('message', (data: Buffer) => {
    const channel = data[0]!;
    let payload = data.subarray(1);
    if (!prefixed.has(channel)) {
      prefixed.add(channel);
      payload = payload.subarray(2);
    }
    if (payload.length === 0) return;
    if (channel === 0) {
      if (!socket.write(payload)) {
        ws.pause();
        socket.once('drain', () => ws.resume());
      }
    } else if (channel === 1) {
      io.stderr.write(`kubelet-ts port-forward: ${payload.toString('utf8')}\n`);
      socket.destroy();
      ws.close();
    }
  });
  // At most 16 messages unsent before the local side is paused: a slow agent slows the client.
  let unsent = 0;
  socket.on('data', (chunk: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    unsent += 1;
    ws.send(Buffer.concat([Buffer.from([0]), chunk]), () => {
      unsent -= 1;
      if (unsent < 16 && socket.isPaused()) socket.resume();
    });
    if (unsent >= 16) socket.pause();
  });
  socket.once('close', () => ws.close());
  ws.once('close', () => socket.end());
  ws.resume();
}
