import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { independentDocker } from '@kubelet-ts/testkit';

/**
 * The engine's own word that a container exited, heard by a raw subscriber with nothing of the
 * agent between: the physical limit of "exit seen" for anyone who listens to the engine. Each
 * arrival is stamped with `process.hrtime.bigint()` the moment its line or message is read.
 */
export interface RawExits {
  /** When the exit of `containerId` arrived (now or later). */
  of(containerId: string): Promise<bigint>;
  close(): void;
}

class Arrivals {
  private readonly seen = new Map<string, bigint>();
  private readonly waiting = new Map<string, (at: bigint) => void>();

  arrived(id: string): void {
    const at = process.hrtime.bigint();
    if (this.seen.has(id)) return;
    this.seen.set(id, at);
    this.waiting.get(id)?.(at);
    this.waiting.delete(id);
  }

  /** Rejects when nothing came within 30 s: the subscriber lost its stream, and the run would hang. */
  of(id: string): Promise<bigint> {
    const at = this.seen.get(id);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`the engine's exit event of ${id} did not reach the raw subscriber within 30 s`));
      }, 30_000);
      this.waiting.set(id, (at) => {
        clearTimeout(timer);
        resolve(at);
      });
    });
  }
}

/** Docker's `die` events (`GET /events`) of the containers carrying `label`. */
export async function rawDockerExits(client: ReturnType<typeof independentDocker>, label: string): Promise<RawExits> {
  const arrivals = new Arrivals();
  const stream = (await client.getEvents({ filters: { type: ['container'], event: ['die'], label: [label] } })) as unknown as Readable;
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  lines.on('line', (text) => {
    try {
      const line = JSON.parse(text) as { Actor?: { ID?: string }; id?: string };
      const id = line.Actor?.ID ?? line.id;
      if (id !== undefined) arrivals.arrived(id);
    } catch {
      // not an event line
    }
  });
  stream.on('error', () => undefined);
  return {
    of: (id) => arrivals.of(id),
    close: () => {
      lines.close();
      stream.destroy();
    },
  };
}

const PROTO_DIR = fileURLToPath(new URL('../../../adapters/runtime-cri/proto/', import.meta.url));

/** containerd's `/tasks/exit` events in CRI's namespace, on a gRPC channel of their own. */
export function rawContainerdExits(endpoint: string): RawExits {
  const arrivals = new Arrivals();
  const definition = protoLoader.loadSync('containerd-events.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    longs: String,
    defaults: true,
    json: true,
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    containerd: { services: { events: { v1: { Events: new (target: string, credentials: grpc.ChannelCredentials) => grpc.Client } } } };
  };
  const client = new pkg.containerd.services.events.v1.Events(endpoint, grpc.credentials.createInsecure()) as grpc.Client & {
    Subscribe(
      request: { filters: string[] },
      metadata: grpc.Metadata,
    ): grpc.ClientReadableStream<{ event?: { id?: string; containerId?: string } | null }>;
  };
  const metadata = new grpc.Metadata();
  metadata.set('containerd-namespace', 'k8s.io');
  const call = client.Subscribe({ filters: ['namespace=="k8s.io",topic=="/tasks/exit"'] }, metadata);
  call.on('data', (envelope) => {
    const e = envelope.event ?? {};
    // The container's own process: an exec'd one names itself in `id`.
    if (e.containerId !== undefined && e.id === e.containerId) arrivals.arrived(e.containerId);
  });
  call.on('error', () => undefined);
  return {
    of: (id) => arrivals.of(id),
    close: () => {
      call.cancel();
      client.close();
    },
  };
}
