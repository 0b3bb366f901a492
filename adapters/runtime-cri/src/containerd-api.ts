import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** containerd's own services and messages that the adapter uses (see the files), shipped beside `dist/`. */
const PROTO_DIR = fileURLToPath(new URL('../proto/', import.meta.url));

/** The containerd namespace of everything its CRI plugin makes. */
export const CONTAINERD_CRI_NAMESPACE = 'k8s.io';

const packages = new Map<string, grpc.GrpcObject>();

/**
 * The client class of one of containerd's services on the CRI socket, from its proto file (loaded
 * once): `service` is its full name, e.g. `containerd.services.tasks.v1.Tasks`. With `json`, an
 * `Any` is decoded by the name in its type URL into a message of the loaded files.
 */
export function containerdService<C extends grpc.Client>(
  file: string,
  service: string,
): new (
  address: string,
  credentials: grpc.ChannelCredentials,
) => C {
  let pkg = packages.get(file);
  if (pkg === undefined) {
    const definition = protoLoader.loadSync(file, { includeDirs: [PROTO_DIR], keepCase: false, longs: String, defaults: true, json: true });
    pkg = grpc.loadPackageDefinition(definition);
    packages.set(file, pkg);
  }
  let found: unknown = pkg;
  for (const part of service.split('.')) found = (found as Record<string, unknown>)[part];
  return found as new (
    address: string,
    credentials: grpc.ChannelCredentials,
  ) => C;
}

/** What every call to containerd's own services carries: the namespace of CRI's containers. */
export function criNamespaceMetadata(): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('containerd-namespace', CONTAINERD_CRI_NAMESPACE);
  return metadata;
}
