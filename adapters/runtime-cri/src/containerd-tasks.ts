import * as grpc from '@grpc/grpc-js';
import { containerdService, criNamespaceMetadata } from './containerd-api.js';
import { grpcTarget } from './cri-client.js';
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

/** The task service on `endpoint` (containerd's socket), one channel, each call within `timeoutMs`. */
export function containerdTasks(endpoint: string, timeoutMs: number): ContainerdTasks {
  // ProcessInfo.info, an Any, is decoded into ProcessDetails by the name in its type URL.
  const Tasks = containerdService<TasksClient>('containerd-tasks.proto', 'containerd.services.tasks.v1.Tasks');
  let client: TasksClient | undefined;
  const connected = () => (client ??= new Tasks(grpcTarget(endpoint), grpc.credentials.createInsecure()));
  const metadata = criNamespaceMetadata;
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
