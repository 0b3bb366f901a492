import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { CONTAINERD_CRI_NAMESPACE } from './containerd-events.js';
import { grpcTarget } from './cri-client.js';

const PROTO_DIR = fileURLToPath(new URL('../proto/', import.meta.url));
const SIGKILL = 9;

/**
 * The exec processes of containerd's tasks, through its own task service on the CRI socket: what
 * the adapter needs to end the process of an exec session whose caller left, which CRI cannot.
 */
export interface ContainerdTasks {
  /** The exec ids of the container's running exec processes. */
  execIds(containerId: string): Promise<Set<string>>;
  /** SIGKILL to the exec process `execId` of the container (its own id: no pid to reuse). */
  kill(containerId: string, execId: string): Promise<void>;
  close(): void;
}

interface ListPidsResponse {
  processes?: Array<{ pid?: number; info?: { execId?: string } | null }>;
}

type TasksClient = grpc.Client & {
  ListPids(
    request: { containerId: string },
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null, response?: ListPidsResponse) => void,
  ): void;
  Kill(
    request: { containerId: string; execId: string; signal: number },
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null) => void,
  ): void;
};

let TasksService: (new (address: string, credentials: grpc.ChannelCredentials) => TasksClient) | undefined;

/** The task service on `endpoint` (containerd's socket), one channel, each call within `timeoutMs`. */
export function containerdTasks(endpoint: string, timeoutMs: number): ContainerdTasks {
  if (TasksService === undefined) {
    // `json` decodes ProcessInfo.info, an Any, into ProcessDetails by the name in its type URL.
    const definition = protoLoader.loadSync('containerd-tasks.proto', {
      includeDirs: [PROTO_DIR],
      keepCase: false,
      longs: String,
      defaults: true,
      json: true,
    });
    const pkg = grpc.loadPackageDefinition(definition) as unknown as {
      containerd: { services: { tasks: { v1: { Tasks: typeof TasksService } } } };
    };
    TasksService = pkg.containerd.services.tasks.v1.Tasks;
  }
  let client: TasksClient | undefined;
  const connected = () => (client ??= new TasksService!(grpcTarget(endpoint), grpc.credentials.createInsecure()));
  const metadata = () => {
    const m = new grpc.Metadata();
    m.set('containerd-namespace', CONTAINERD_CRI_NAMESPACE);
    return m;
  };
  const options = () => ({ deadline: Date.now() + timeoutMs });
  return {
    execIds: (containerId) =>
      new Promise((resolve, reject) =>
        connected().ListPids({ containerId }, metadata(), options(), (error, response) => {
          if (error !== null) return reject(error);
          const ids = (response?.processes ?? []).flatMap((p) => (p.info?.execId ? [p.info.execId] : []));
          resolve(new Set(ids));
        }),
      ),
    kill: (containerId, execId) =>
      new Promise((resolve, reject) =>
        connected().Kill({ containerId, execId, signal: SIGKILL }, metadata(), options(), (error) =>
          error === null || error.code === grpc.status.NOT_FOUND ? resolve() : reject(error),
        ),
      ),
    close: () => {
      client?.close();
      client = undefined;
    },
  };
}
