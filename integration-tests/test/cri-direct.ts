import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/**
 * A CRI v1 client of the tests' own, to look at what an agent did on containerd and to make things
 * the agent must not touch. It shares nothing with `@kubelet-ts/runtime-cri`, not even its .proto:
 * a wrong field number there (labels written where containerd reads something else) would read
 * back "right" through the adapter's own schema, and show here.
 *
 * Field numbers are those of k8s.io/cri-api `pkg/apis/runtime/v1/api.proto`; only the fields the
 * tests use are declared (decoding skips the rest).
 */
const PROTO = `
syntax = "proto3";
package runtime.v1;

service RuntimeService {
  rpc Version(VersionRequest) returns (VersionResponse) {}
  rpc RunPodSandbox(RunPodSandboxRequest) returns (RunPodSandboxResponse) {}
  rpc StopPodSandbox(PodSandboxIdRequest) returns (Empty) {}
  rpc RemovePodSandbox(PodSandboxIdRequest) returns (Empty) {}
  rpc ListPodSandbox(ListPodSandboxRequest) returns (ListPodSandboxResponse) {}
  rpc CreateContainer(CreateContainerRequest) returns (CreateContainerResponse) {}
  rpc StartContainer(ContainerIdRequest) returns (Empty) {}
  rpc ListContainers(ListContainersRequest) returns (ListContainersResponse) {}
  rpc ContainerStatus(ContainerIdRequest) returns (ContainerStatusResponse) {}
  rpc ExecSync(ExecSyncRequest) returns (ExecSyncResponse) {}
}

service ImageService {
  rpc ImageStatus(ImageStatusRequest) returns (ImageStatusResponse) {}
}

message Empty {}
message VersionRequest { string version = 1; }
message VersionResponse { string runtime_name = 2; string runtime_version = 3; }

message PodSandboxMetadata { string name = 1; string uid = 2; string namespace = 3; uint32 attempt = 4; }
message LinuxPodSandboxConfig { string cgroup_parent = 1; }
message PodSandboxConfig {
  PodSandboxMetadata metadata = 1;
  string hostname = 2;
  map<string, string> labels = 6;
  LinuxPodSandboxConfig linux = 8;
}
message RunPodSandboxRequest { PodSandboxConfig config = 1; }
message RunPodSandboxResponse { string pod_sandbox_id = 1; }
message PodSandboxIdRequest { string pod_sandbox_id = 1; }

enum PodSandboxState { SANDBOX_READY = 0; SANDBOX_NOTREADY = 1; }
message PodSandboxFilter { string id = 1; map<string, string> label_selector = 3; }
message ListPodSandboxRequest { PodSandboxFilter filter = 1; }
message PodSandbox {
  string id = 1;
  PodSandboxMetadata metadata = 2;
  PodSandboxState state = 3;
  map<string, string> labels = 5;
}
message ListPodSandboxResponse { repeated PodSandbox items = 1; }

message ImageSpec { string image = 1; }
message ContainerMetadata { string name = 1; uint32 attempt = 2; }
message ContainerConfig {
  ContainerMetadata metadata = 1;
  ImageSpec image = 2;
  repeated string command = 3;
  map<string, string> labels = 9;
}
message CreateContainerRequest { string pod_sandbox_id = 1; ContainerConfig config = 2; PodSandboxConfig sandbox_config = 3; }
message CreateContainerResponse { string container_id = 1; }
message ContainerIdRequest { string container_id = 1; }

enum ContainerState { CONTAINER_CREATED = 0; CONTAINER_RUNNING = 1; CONTAINER_EXITED = 2; CONTAINER_UNKNOWN = 3; }
message ContainerFilter { string id = 1; string pod_sandbox_id = 3; map<string, string> label_selector = 4; }
message ListContainersRequest { ContainerFilter filter = 1; }
message Container {
  string id = 1;
  string pod_sandbox_id = 2;
  ContainerMetadata metadata = 3;
  ContainerState state = 6;
  map<string, string> labels = 8;
}
message ListContainersResponse { repeated Container containers = 1; }
message Mount { string container_path = 1; string host_path = 2; bool readonly = 3; }
message ContainerStatus {
  string id = 1;
  ContainerState state = 3;
  int64 started_at = 5;
  map<string, string> labels = 12;
  repeated Mount mounts = 14;
}
message ContainerStatusResponse { ContainerStatus status = 1; }

message ExecSyncRequest { string container_id = 1; repeated string cmd = 2; int64 timeout = 3; }
message ExecSyncResponse { bytes stdout = 1; bytes stderr = 2; int32 exit_code = 3; }

message ImageStatusRequest { ImageSpec image = 1; }
message Image { string id = 1; }
message ImageStatusResponse { Image image = 1; }
`;

export interface DirectSandbox {
  id: string;
  metadata: { name: string; uid: string; namespace: string } | null;
  state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
  labels: Record<string, string>;
}

export interface DirectContainer {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number } | null;
  state: 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
  labels: Record<string, string>;
}

export interface DirectContainerStatus {
  id: string;
  state: DirectContainer['state'];
  /** Nanoseconds since the epoch, as decimal text. */
  startedAt: string;
  labels: Record<string, string>;
  mounts: Array<{ containerPath: string; hostPath: string; readonly: boolean }>;
}

export interface DirectPodConfig {
  metadata: { name: string; uid: string; namespace: string; attempt: number };
  hostname: string;
  labels: Record<string, string>;
  linux: { cgroupParent: string };
}

/** The calls the tests make, each with a 30 s deadline; `close()` ends the channel. */
export interface CriDirect {
  version(): Promise<{ runtimeName: string; runtimeVersion: string }>;
  runPodSandbox(config: DirectPodConfig): Promise<string>;
  stopPodSandbox(id: string): Promise<void>;
  removePodSandbox(id: string): Promise<void>;
  listPodSandbox(labelSelector?: Record<string, string>): Promise<DirectSandbox[]>;
  /** Creates and starts a container running `command` in the sandbox. */
  runContainer(
    sandboxId: string,
    sandbox: DirectPodConfig,
    container: { name: string; image: string; command: string[]; labels: Record<string, string> },
  ): Promise<string>;
  listContainers(filter?: { podSandboxId?: string; labelSelector?: Record<string, string> }): Promise<DirectContainer[]>;
  containerStatus(id: string): Promise<DirectContainerStatus>;
  execSync(id: string, cmd: string[], timeoutSeconds?: number): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  /** Whether containerd has the image (imported or pulled). */
  hasImage(image: string): Promise<boolean>;
  close(): void;
}

type Unary = (request: object, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response: unknown) => void) => void;

/** A client on `endpoint` (`unix:///path/to.sock`). */
export function criDirect(endpoint: string): CriDirect {
  const definition = loadProto();
  type Service = new (target: string, credentials: grpc.ChannelCredentials) => grpc.Client;
  const { v1 } = (
    grpc.loadPackageDefinition(definition) as unknown as { runtime: { v1: { RuntimeService: Service; ImageService: Service } } }
  ).runtime;
  const runtime = new v1.RuntimeService(endpoint, grpc.credentials.createInsecure());
  const images = new v1.ImageService(endpoint, grpc.credentials.createInsecure());
  const on =
    (client: grpc.Client) =>
    <T>(method: string, request: object): Promise<T> =>
      new Promise((resolve, reject) => {
        const fn = (client as unknown as Record<string, Unary>)[method]!;
        fn.call(client, request, { deadline: Date.now() + 30_000 }, (error, response) =>
          error === null ? resolve(response as T) : reject(error),
        );
      });
  const call = on(runtime);
  return {
    version: () => call('Version', {}),
    runPodSandbox: async (config) => (await call<{ podSandboxId: string }>('RunPodSandbox', { config })).podSandboxId,
    stopPodSandbox: async (id) => void (await call('StopPodSandbox', { podSandboxId: id })),
    removePodSandbox: async (id) => void (await call('RemovePodSandbox', { podSandboxId: id })),
    listPodSandbox: async (labelSelector) =>
      (await call<{ items: DirectSandbox[] }>('ListPodSandbox', { filter: { labelSelector: labelSelector ?? {} } })).items,
    async runContainer(sandboxId, sandbox, c) {
      const { containerId } = await call<{ containerId: string }>('CreateContainer', {
        podSandboxId: sandboxId,
        config: { metadata: { name: c.name, attempt: 0 }, image: { image: c.image }, command: c.command, labels: c.labels },
        sandboxConfig: sandbox,
      });
      await call('StartContainer', { containerId });
      return containerId;
    },
    listContainers: async (filter = {}) =>
      (
        await call<{ containers: DirectContainer[] }>('ListContainers', {
          filter: { podSandboxId: filter.podSandboxId ?? '', labelSelector: filter.labelSelector ?? {} },
        })
      ).containers,
    containerStatus: async (id) => (await call<{ status: DirectContainerStatus }>('ContainerStatus', { containerId: id })).status,
    async execSync(id, cmd, timeoutSeconds = 10) {
      const r = await call<{ stdout: Buffer; stderr: Buffer; exitCode: number }>('ExecSync', {
        containerId: id,
        cmd,
        timeout: timeoutSeconds,
      });
      return { exitCode: r.exitCode, stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8') };
    },
    hasImage: async (image) =>
      ((await on(images)<{ image: { id: string } | null }>('ImageStatus', { image: { image } })).image?.id ?? '') !== '',
    close() {
      runtime.close();
      images.close();
    },
  };
}

/** proto-loader reads files only: the schema above goes through one for a moment. */
function loadProto(): protoLoader.PackageDefinition {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-ts-cri-proto-'));
  try {
    writeFileSync(join(dir, 'cri.proto'), PROTO);
    return protoLoader.loadSync(join(dir, 'cri.proto'), { keepCase: false, longs: String, enums: String, defaults: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
