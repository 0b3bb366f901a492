import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/**
 * The baseline of the containerd rows: CRI calls made straight on a gRPC channel, with nothing of
 * the adapter between (no listing, no status, no name checks). Its own slice of CRI v1
 * (k8s.io/cri-api `pkg/apis/runtime/v1/api.proto` field numbers), with the fields a pod of the
 * agent is made with, so that the raw pod is the same pod.
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
  rpc StopContainer(StopContainerRequest) returns (Empty) {}
  rpc RemoveContainer(ContainerIdRequest) returns (Empty) {}
  rpc ExecSync(ExecSyncRequest) returns (ExecSyncResponse) {}
  rpc Exec(ExecRequest) returns (ExecResponse) {}
}

message Empty {}
message VersionRequest { string version = 1; }
message VersionResponse { string runtime_name = 2; string runtime_version = 3; }

enum NamespaceMode { POD = 0; CONTAINER = 1; NODE = 2; TARGET = 3; }
message NamespaceOption { NamespaceMode network = 1; NamespaceMode pid = 2; NamespaceMode ipc = 3; }
message SecurityProfile {
  enum ProfileType { RuntimeDefault = 0; Unconfined = 1; Localhost = 2; }
  ProfileType profile_type = 1;
}
message LinuxSandboxSecurityContext { NamespaceOption namespace_options = 1; SecurityProfile seccomp = 9; }
message LinuxPodSandboxConfig { string cgroup_parent = 1; LinuxSandboxSecurityContext security_context = 2; }
message PodSandboxMetadata { string name = 1; string uid = 2; string namespace = 3; uint32 attempt = 4; }
message PodSandboxConfig {
  PodSandboxMetadata metadata = 1;
  string hostname = 2;
  string log_directory = 3;
  map<string, string> labels = 6;
  LinuxPodSandboxConfig linux = 8;
}
message RunPodSandboxRequest { PodSandboxConfig config = 1; }
message RunPodSandboxResponse { string pod_sandbox_id = 1; }
message PodSandboxIdRequest { string pod_sandbox_id = 1; }
message PodSandboxFilter { map<string, string> label_selector = 3; }
message ListPodSandboxRequest { PodSandboxFilter filter = 1; }
// Every field of CRI's PodSandbox, as for Container below: a pass decodes the whole of both lists.
enum PodSandboxState { SANDBOX_READY = 0; SANDBOX_NOTREADY = 1; }
message PodSandbox {
  string id = 1;
  PodSandboxMetadata metadata = 2;
  PodSandboxState state = 3;
  int64 created_at = 4;
  map<string, string> labels = 5;
  map<string, string> annotations = 6;
  string runtime_handler = 7;
}
message ListPodSandboxResponse { repeated PodSandbox items = 1; }

message ImageSpec { string image = 1; }
message ContainerMetadata { string name = 1; uint32 attempt = 2; }
message LinuxContainerSecurityContext { NamespaceOption namespace_options = 3; SecurityProfile seccomp = 15; }
message LinuxContainerConfig { LinuxContainerSecurityContext security_context = 2; }
message ContainerConfig {
  ContainerMetadata metadata = 1;
  ImageSpec image = 2;
  repeated string command = 3;
  map<string, string> labels = 9;
  string log_path = 11;
  LinuxContainerConfig linux = 15;
}
message CreateContainerRequest { string pod_sandbox_id = 1; ContainerConfig config = 2; PodSandboxConfig sandbox_config = 3; }
message CreateContainerResponse { string container_id = 1; }
message ContainerIdRequest { string container_id = 1; }
enum ContainerState { CONTAINER_CREATED = 0; CONTAINER_RUNNING = 1; CONTAINER_EXITED = 2; CONTAINER_UNKNOWN = 3; }
message ContainerStateValue { ContainerState state = 1; }
message ContainerFilter { string id = 1; ContainerStateValue state = 2; string pod_sandbox_id = 3; map<string, string> label_selector = 4; }
message ListContainersRequest { ContainerFilter filter = 1; }
// Every field of CRI's Container, so that the raw list decodes what the adapter's list decodes.
message Container {
  string id = 1;
  string pod_sandbox_id = 2;
  ContainerMetadata metadata = 3;
  ImageSpec image = 4;
  string image_ref = 5;
  ContainerState state = 6;
  int64 created_at = 7;
  map<string, string> labels = 8;
  map<string, string> annotations = 9;
}
message ListContainersResponse { repeated Container containers = 1; }
message StopContainerRequest { string container_id = 1; int64 timeout = 2; }
message ExecSyncRequest { string container_id = 1; repeated string cmd = 2; int64 timeout = 3; }
message ExecSyncResponse { bytes stdout = 1; bytes stderr = 2; int32 exit_code = 3; }
message ExecRequest { string container_id = 1; repeated string cmd = 2; bool tty = 3; bool stdin = 4; bool stdout = 5; bool stderr = 6; }
message ExecResponse { string url = 1; }
`;

// What the adapter runs every pod with (its sandbox-config.ts): the kubelet's defaults.
const SECURITY_CONTEXT = { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' }, seccomp: { profileType: 'RuntimeDefault' } };

export interface RawCriPod {
  readonly name: string;
  readonly image: string;
  readonly command: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  /** The folder the pod's log directory goes in, as the agent's `logsRoot`. */
  readonly logsRoot: string;
  readonly cgroupParent: string;
}

export interface RawCri {
  version(): Promise<{ runtimeName: string; runtimeVersion: string }>;
  /** RunPodSandbox, CreateContainer, StartContainer: a pod of one container, running. Its sandbox id. */
  runPod(pod: RawCriPod): Promise<string>;
  /** StopPodSandbox, RemovePodSandbox (which removes its containers). */
  removePod(sandboxId: string): Promise<void>;
  /** Sandboxes carrying these label values. */
  sandboxes(labelSelector: Readonly<Record<string, string>>): Promise<string[]>;
  /** One `ListContainers` of the containers carrying these label values: how many, and how many run. */
  containers(labelSelector: Readonly<Record<string, string>>): Promise<{ all: number; running: number }>;
  /** The running containers carrying these label values, with their sandbox. */
  running(labelSelector: Readonly<Record<string, string>>): Promise<Array<{ id: string; podSandboxId: string }>>;
  /** The container's state as ListContainers has it (`CONTAINER_RUNNING`, `CONTAINER_EXITED`, …); undefined when it lists none. */
  state(containerId: string): Promise<string | undefined>;
  /** `StopContainer` with a timeout of 0: the container is killed at once. */
  kill(containerId: string): Promise<void>;
  /** CreateContainer + StartContainer in a sandbox of `runPod`'s (same config): the new container's id. */
  createStart(sandboxId: string, pod: RawCriPod, name: string): Promise<string>;
  removeContainer(containerId: string): Promise<void>;
  /** `ExecSync`: runs `cmd` in the container to its end (no timeout); its exit code. */
  execSync(containerId: string, cmd: readonly string[]): Promise<number>;
  /** `Exec` with stdout and stderr: the URL of the session on the runtime's streaming server. */
  exec(containerId: string, cmd: readonly string[]): Promise<string>;
  close(): void;
}

type Unary = (request: object, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response: unknown) => void) => void;

export function rawCri(endpoint: string): RawCri {
  const { v1 } = (
    grpc.loadPackageDefinition(loadProto()) as unknown as {
      runtime: { v1: { RuntimeService: new (target: string, credentials: grpc.ChannelCredentials) => grpc.Client } };
    }
  ).runtime;
  const client = new v1.RuntimeService(endpoint, grpc.credentials.createInsecure());
  const call = <T>(method: string, request: object): Promise<T> =>
    new Promise((resolve, reject) => {
      const fn = (client as unknown as Record<string, Unary>)[method]!;
      fn.call(client, request, { deadline: Date.now() + 120_000 }, (error, response) =>
        error === null ? resolve(response as T) : reject(error),
      );
    });
  return {
    version: () => call('Version', {}),
    async runPod(pod) {
      const config = sandboxConfig(pod);
      // The agent makes the log directory too; containerd writes the container's log in it.
      await mkdir(config.logDirectory, { recursive: true });
      const { podSandboxId } = await call<{ podSandboxId: string }>('RunPodSandbox', { config });
      await this.createStart(podSandboxId, pod, 'c0');
      return podSandboxId;
    },
    async createStart(podSandboxId, pod, name) {
      const { containerId } = await call<{ containerId: string }>('CreateContainer', {
        podSandboxId,
        config: {
          metadata: { name, attempt: 0 },
          image: { image: pod.image },
          command: [...pod.command],
          labels: pod.labels,
          logPath: `${name}.log`,
          linux: { securityContext: SECURITY_CONTEXT },
        },
        sandboxConfig: sandboxConfig(pod),
      });
      await call('StartContainer', { containerId });
      return containerId;
    },
    async running(labelSelector) {
      const { containers } = await call<{ containers: Array<{ id: string; podSandboxId: string }> }>('ListContainers', {
        filter: { labelSelector, state: { state: 'CONTAINER_RUNNING' } },
      });
      return containers.map(({ id, podSandboxId }) => ({ id, podSandboxId }));
    },
    async state(containerId) {
      const { containers } = await call<{ containers: Array<{ id: string; state: string }> }>('ListContainers', {
        filter: { id: containerId },
      });
      return containers.find((c) => c.id === containerId)?.state;
    },
    kill: async (containerId) => void (await call('StopContainer', { containerId, timeout: 0 })),
    removeContainer: async (containerId) => void (await call('RemoveContainer', { containerId })),
    execSync: async (containerId, cmd) =>
      (await call<{ exitCode: number }>('ExecSync', { containerId, cmd: [...cmd], timeout: 0 })).exitCode,
    exec: async (containerId, cmd) => (await call<{ url: string }>('Exec', { containerId, cmd: [...cmd], stdout: true, stderr: true })).url,
    async removePod(sandboxId) {
      await call('StopPodSandbox', { podSandboxId: sandboxId });
      await call('RemovePodSandbox', { podSandboxId: sandboxId });
    },
    sandboxes: async (labelSelector) =>
      (await call<{ items: Array<{ id: string }> }>('ListPodSandbox', { filter: { labelSelector } })).items.map((s) => s.id),
    async containers(labelSelector) {
      const { containers } = await call<{ containers: Array<{ state: string }> }>('ListContainers', { filter: { labelSelector } });
      return { all: containers.length, running: containers.filter((c) => c.state === 'CONTAINER_RUNNING').length };
    },
    close: () => client.close(),
  };
}

function sandboxConfig(pod: RawCriPod) {
  return {
    metadata: { name: pod.name, uid: pod.name, namespace: 'bench-raw', attempt: 0 },
    hostname: pod.name,
    logDirectory: join(pod.logsRoot, pod.name),
    labels: pod.labels,
    linux: { cgroupParent: pod.cgroupParent, securityContext: SECURITY_CONTEXT },
  };
}

/** proto-loader reads files only: the schema above goes through one for a moment. */
function loadProto(): protoLoader.PackageDefinition {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-ts-bench-proto-'));
  try {
    writeFileSync(join(dir, 'cri.proto'), PROTO);
    return protoLoader.loadSync(join(dir, 'cri.proto'), { keepCase: false, longs: String, enums: String, defaults: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
