export { ApiPodSource, MIRROR_ANNOTATION, type ApiPod, type ApiPodSourceOptions, type UnrunnablePod } from './api-pod-source.js';
export { ClusterNode, KUBELET_VERSION, type ClusterAgent, type ClusterNodeOptions } from './cluster-node.js';
export { firstMachineAddress, goArch, hostFacts } from './host-facts.js';
export { MirrorPods, type MirrorPodsOptions, type StaticPods } from './mirror-pods.js';
export { NodeEvents, type NodeEventsOptions } from './node-events.js';
export { NODE_LEASE_NAMESPACE, NodeLease, type NodeLeaseOptions } from './node-lease.js';
export {
  nodeLabels,
  nodeObject,
  nodeStatus,
  type HostFacts,
  type NodeHealth,
  type NodeSpecFacts,
  type NodeStatusWithFeatures,
} from './node-object.js';
export { NodeRegistration, type NodeRegistrationOptions } from './node-registration.js';
export { PodStatusWriter, type PodStatusWriterOptions, type StatusSource } from './pod-status-writer.js';
export { AUTHORIZED_CACHE_MS, ClusterAuth, TOKEN_REVIEW_CACHE_MS, UNAUTHORIZED_CACHE_MS, type ClusterAuthOptions } from './cluster-auth.js';
export {
  ServingCertificateRequester,
  selfSignedServingCertificate,
  type ServingCertificateRequestOptions,
  type ServingFiles,
  type ServingNames,
} from './serving-certificate.js';
export { ClientCertificate, type ClientCertificateOptions } from './client-certificate.js';
export {
  ApiObjects,
  OBJECT_REFRESH_MS,
  TOKEN_MAX_AGE_MS,
  tokenRefreshDue,
  type ApiObjectsOptions,
  type IssuedToken,
} from './api-objects.js';
export {
  linkVariables,
  masterVariables,
  MASTER_SERVICE_NAME,
  serviceVariablesOf,
  type ApiService,
  type PodApiServer,
} from './service-variables.js';
export { ApiServices, type ApiServicesOptions } from './api-services.js';
export { PodFeed, type PodFeedListener, type PodFeedOptions } from './pod-feed.js';
export { poolConnections, type PooledConnections } from './pooled-connections.js';
