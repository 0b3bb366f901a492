import { grpcHealthCheck } from '@kubelet-ts/grpc-probe';
import { socketNetworkCheck, type NetworkCheck } from '@kubelet-ts/runner';

/**
 * How the command's agent dials its probes: the runner's sockets, and gRPC from
 * `@kubelet-ts/grpc-probe`, which the runner leaves out so that an embedded agent installs no gRPC
 * library (see `NetworkCheck.grpc`).
 */
export const probeNetwork: NetworkCheck = { ...socketNetworkCheck, grpc: grpcHealthCheck };
