import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A real HTTP server on 127.0.0.1 whose answer a test sets; it keeps the headers of every request. */
export class ManifestServer {
  readonly requests: IncomingHttpHeaders[] = [];
  /** Requests being answered right now, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;
  handler: Handler = (_req, res) => res.end();
  private readonly server: Server = createServer((req, res) => {
    this.requests.push(req.headers);
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.on('close', () => (this.inFlight -= 1));
    this.handler(req, res);
  });

  async listen(port = 0): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/manifests`;
  }

  serve(body: string, headers: Record<string, string> = {}): void {
    this.handler = (_req, res) => res.writeHead(200, headers).end(body);
  }

  /** Accepts the request and never answers it. */
  hang(): void {
    this.handler = () => {};
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    this.server.closeAllConnections(); // hanging requests included
    await new Promise((r) => this.server.close(r));
  }
}
