import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sourceFuzzContract } from '@kubelet-ts/conformance';
import { HttpManifestSource } from '../src/index.js';

/**
 * A real node:http server whose body each publication replaces (with the sentinel in it: a URL
 * serves one document). The source polls every millisecond, so a publication is read within a
 * poll's round trip; without validators, each poll compares the body with the last one.
 */
sourceFuzzContract(
  'http',
  async () => {
    let body: Uint8Array = new Uint8Array();
    const server = createServer((_req, res) => res.end(body));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const source = new HttpManifestSource({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/manifests`,
      checkFrequencyMs: 1,
    });
    return {
      kind: 'document',
      sentinel: 'embedded',
      start: (sink) => source.start(sink),
      async publish(bytes) {
        body = bytes;
      },
      async close() {
        await source.close();
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  },
  { runs: { short: 400, long: 10_000 } },
);
