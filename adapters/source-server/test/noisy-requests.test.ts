import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler, agentApiListener } from '../src/index.js';
import { FakeView } from './fake-view.js';
import { raw } from './http-request.js';
import { RecordingLogger } from './recording-logger.js';

/**
 * Anyone who can connect can send these, token or not: each must cost one debug line, never an
 * error with a stack trace, or a stranger decides how fast the agent's log grows.
 */
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

let sink: RecordingSink;

async function startSource(logger: RecordingLogger): Promise<number> {
  const source = new ServerManifestSource({ port: 0, authToken: 's3cret', logger });
  source.mount(agentApiHandler(new FakeView()));
  sink = new RecordingSink();
  await source.start(sink);
  close = () => source.close();
  // What is left to count is what requests made it log, not that it listens.
  logger.entries.length = 0;
  return Number(new URL(source.url).port);
}

async function startListener(logger: RecordingLogger): Promise<number> {
  const server: Server = createServer(agentApiListener(new FakeView(), { authToken: 's3cret', logger }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return (server.address() as AddressInfo).port;
}

/** Waits until `logger` holds an entry, or fails after `ms`. */
async function logged(logger: RecordingLogger, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (logger.entries.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

describe.each([
  ['the agent server', startSource],
  ["agentApiListener on an embedder's server", startListener],
])('%s against malformed request targets', (_, start) => {
  it.each(['http://[::1/pods', 'http://[::1', 'http://:99999/pods'])(
    'answers GET %s with a JSON 400, logged once at debug',
    async (target) => {
      const logger = new RecordingLogger();
      const port = await start(logger);
      const answer = await raw(port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 400/);
      expect(answer).toMatch(/\{"error":"malformed request target.*"\}$/);
      expect(logger.at('error')).toEqual([]);
      expect(logger.entries).toEqual([{ level: 'debug', fields: expect.objectContaining({ status: 400 }), message: 'request refused' }]);
    },
  );
});

describe('the agent server against request bodies cut off', () => {
  const head = (port: number) =>
    `POST /container HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer s3cret\r\nContent-Type: application/yaml\r\nContent-Length: 1000\r\n\r\nid: web\n`;

  it.each([
    ['closed', (s: Socket) => s.end()],
    ['destroyed', (s: Socket) => s.destroy()],
    ['reset (RST)', (s: Socket) => s.resetAndDestroy()],
  ])('logs a body whose connection was %s at debug, not at error', async (_, cut) => {
    const logger = new RecordingLogger();
    const port = await startSource(logger);
    await raw(port, head(port), (socket) => setTimeout(() => cut(socket), 50));
    await logged(logger);
    expect(logger.at('error')).toEqual([]);
    expect(logger.entries).toEqual([{ level: 'debug', fields: expect.objectContaining({ status: 400 }), message: 'request refused' }]);
    expect(sink.updates).toEqual([[]]);
  });
});
