import { WebSocketServer } from 'ws';

// The ceiling of the port-forward rows' client: a WebSocket server (the `ws` library, as the
// agent's) that speaks /portForward's framing and relays nothing. Port 8080's connection sends
// `bytes` (argv) in messages of 64 KiB, at most 16 unwritten (as the agent relays), then closes;
// port 8081's reads `bytes` and says `ok`. Says its port over IPC; ends when its parent goes.
const bytes = Number(process.argv[2]);
const server = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 4 * 1024 * 1024, handleProtocols: () => 'v4.channel.k8s.io' });
server.on('listening', () => process.send?.({ port: (server.address() as { port: number }).port }));
server.on('connection', (ws, req) => {
  const port = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ports'));
  const opening = Buffer.alloc(2);
  opening.writeUInt16LE(port);
  ws.send(Buffer.concat([Buffer.from([0]), opening]));
  ws.send(Buffer.concat([Buffer.from([1]), opening]));
  if (port === 8081) {
    let got = 0;
    ws.on('message', (data: Buffer) => {
      got += data.length - 1;
      if (got >= bytes) ws.send(Buffer.from([0, ...Buffer.from('ok')]));
    });
    return;
  }
  const chunk = Buffer.alloc(64 * 1024 + 1);
  let left = bytes;
  let waiting = 0;
  const more = () => {
    while (left > 0 && waiting < 16) {
      const n = Math.min(left, chunk.length - 1);
      left -= n;
      waiting += 1;
      ws.send(chunk.subarray(0, n + 1), { binary: true }, () => {
        waiting -= 1;
        if (left === 0 && waiting === 0) ws.close(1000);
        else more();
      });
    }
  };
  more();
});
process.on('disconnect', () => process.exit(0));
