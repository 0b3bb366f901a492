import { connect, createServer, type Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';

// The ceiling of scenario 15's port-forward row: one WebSocket hop in Node, no SPDY, no API server,
// no agent. Two processes of this script (as kubectl and the server side are two):
//   `relay HOST PORT`: a `ws` server on 127.0.0.1 that, per connection, dials HOST:PORT (the pod's
//     HTTP server, straight over Docker's bridge) and relays its bytes both ways in binary messages;
//   `tunnel URL`: a TCP listener on 127.0.0.1 that tunnels each connection through a WebSocket to URL.
// Each sends at most 16 messages unwritten and pauses the socket meanwhile (as the agent relays); the
// receiving side pauses the WebSocket while its socket's buffer is full. Says its port over IPC; ends
// when its parent goes.

const [mode, a, b] = process.argv.slice(2);
const IN_FLIGHT = 16;

/** Socket → WebSocket in binary messages, at most IN_FLIGHT unwritten; WebSocket → socket, pausing on a full buffer. */
function pipe(socket: Socket, ws: WebSocket): void {
  let waiting = 0;
  socket.on('data', (chunk: Buffer) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    waiting += 1;
    if (waiting >= IN_FLIGHT) socket.pause();
    ws.send(chunk, { binary: true }, () => {
      waiting -= 1;
      if (waiting < IN_FLIGHT) socket.resume();
    });
  });
  ws.on('message', (data: Buffer) => {
    if (!socket.write(data)) {
      ws.pause();
      socket.once('drain', () => ws.resume());
    }
  });
  socket.on('end', () => ws.close(1000));
  socket.on('error', () => ws.terminate());
  ws.on('close', () => socket.end());
  ws.on('error', () => socket.destroy());
}

if (mode === 'relay') {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 4 * 1024 * 1024 });
  server.on('listening', () => process.send?.({ port: (server.address() as { port: number }).port }));
  server.on('connection', (ws) => {
    ws.pause();
    const socket = connect(Number(b), a!, () => ws.resume());
    pipe(socket, ws);
  });
} else if (mode === 'tunnel') {
  const server = createServer((socket) => {
    socket.pause();
    const ws = new WebSocket(a!, { perMessageDeflate: false, maxPayload: 4 * 1024 * 1024 });
    ws.on('open', () => socket.resume());
    pipe(socket, ws);
  });
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as { port: number }).port }));
} else {
  throw new Error(`cluster-streams-relay-child: mode relay or tunnel, got ${mode}`);
}
process.on('disconnect', () => process.exit(0));
