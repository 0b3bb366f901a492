import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { CriApi } from './cri-api.js';
import { cachedListDeserializer } from './list-decoding.js';

/** The package's own slice of the CRI API (see the file), shipped beside `dist/`. */
const PROTO = fileURLToPath(new URL('../proto/runtime-v1.proto', import.meta.url));

type ServiceConstructor = new (address: string, credentials: grpc.ChannelCredentials, options: grpc.ClientOptions) => grpc.Client;

let services: { runtime: ServiceConstructor; image: ServiceConstructor } | undefined;

function loadServices(): { runtime: ServiceConstructor; image: ServiceConstructor } {
  if (services === undefined) {
    // int64 as numbers: a sample of 200 pods decodes thousands of them, and Long → text cost the idle
    // agent most of a sample's CPU; nanosecond times lose below 256 ns as numbers, nothing the agent reads.
    const definition = protoLoader.loadSync(PROTO, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
    // A pass's two lists decode only the entries that changed since the last (see list-decoding.ts).
    const runtimeMethods = definition['runtime.v1.RuntimeService'] as Record<string, protoLoader.MethodDefinition<object, object>>;
    for (const [method, list] of [
      ['ListContainers', 'containers'],
      ['ListPodSandbox', 'items'],
    ] as const) {
      const m = runtimeMethods[method]!;
      runtimeMethods[method] = { ...m, responseDeserialize: cachedListDeserializer(list, m.responseDeserialize) as (b: Buffer) => object };
    }
    const v1 = (grpc.loadPackageDefinition(definition) as unknown as { runtime: { v1: Record<string, ServiceConstructor> } }).runtime.v1;
    services = { runtime: v1['RuntimeService']!, image: v1['ImageService']! };
  }
  return services;
}

/**
 * `unix:///run/containerd/containerd.sock` (the kubelet's `--container-runtime-endpoint` form) or
 * a bare socket path, as a gRPC target; anything else (`dns:host:port`) is passed on unchanged.
 */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  return endpoint;
}

/** The socket path an endpoint names, for messages; the endpoint itself when it is not a socket. */
export function socketOf(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('unix:')) return endpoint.slice('unix:'.length);
  return endpoint;
}

// The kubelet's limit for CRI answers (a ListContainers of a busy node is large).
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** A CRI client on one gRPC channel shared by the runtime and image services. */
export function connectCri(endpoint: string): CriApi {
  const { runtime: RuntimeService, image: ImageService } = loadServices();
  const target = grpcTarget(endpoint);
  const channel = new grpc.Channel(target, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  const options: grpc.ClientOptions = { channelOverride: channel };
  const runtime = new RuntimeService(target, grpc.credentials.createInsecure(), options);
  const image = new ImageService(target, grpc.credentials.createInsecure(), options);

  const unary =
    (client: grpc.Client, method: string) =>
    (request: object, deadline: number): Promise<never> =>
      new Promise((resolve, reject) => {
        const fn = (
          client as unknown as Record<
            string,
            (req: object, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: never) => void) => void
          >
        )[method]!;
        fn.call(client, request, { deadline }, (error, response) => (error === null ? resolve(response) : reject(error)));
      });

  return {
    version: unary(runtime, 'Version'),
    runPodSandbox: unary(runtime, 'RunPodSandbox'),
    stopPodSandbox: unary(runtime, 'StopPodSandbox'),
    removePodSandbox: unary(runtime, 'RemovePodSandbox'),
    podSandboxStatus: unary(runtime, 'PodSandboxStatus'),
    listPodSandbox: unary(runtime, 'ListPodSandbox'),
    createContainer: unary(runtime, 'CreateContainer'),
    startContainer: unary(runtime, 'StartContainer'),
    stopContainer: unary(runtime, 'StopContainer'),
    removeContainer: unary(runtime, 'RemoveContainer'),
    listContainers: unary(runtime, 'ListContainers'),
    containerStatus: unary(runtime, 'ContainerStatus'),
    execSync: unary(runtime, 'ExecSync'),
    reopenContainerLog: unary(runtime, 'ReopenContainerLog'),
    exec: unary(runtime, 'Exec'),
    attach: unary(runtime, 'Attach'),
    portForward: unary(runtime, 'PortForward'),
    containerStats: unary(runtime, 'ContainerStats'),
    listContainerStats: unary(runtime, 'ListContainerStats'),
    listPodSandboxStats: unary(runtime, 'ListPodSandboxStats'),
    imageStatus: unary(image, 'ImageStatus'),
    listImages: unary(image, 'ListImages'),
    pullImage: unary(image, 'PullImage'),
    imageFsInfo: unary(image, 'ImageFsInfo'),
    close() {
      runtime.close();
      image.close();
      channel.close();
    },
  };
}
