/**
 * The Kubernetes v1 objects the agent reads and writes, as JSON: the generated types of the
 * types-only package `kubernetes-types` (1.30, the last it publishes; no code is installed), under
 * the names the project uses. One set for the manifest package's `toV1Pod`, the server's `/pods`
 * and the CLI's reading of it. Every field is optional, as in the API; a producer narrows what it
 * always writes (see `PodStatus`, `V1PodWithStatus`).
 */
export type {
  Container as V1Container,
  ContainerState as V1ContainerState,
  ContainerStateTerminated as V1ContainerStateTerminated,
  ContainerStatus as V1ContainerStatus,
  EmptyDirVolumeSource as V1EmptyDirVolumeSource,
  EnvVar as V1EnvVar,
  EnvVarSource as V1EnvVarSource,
  Event as V1Event,
  Pod as V1Pod,
  PodCondition as V1PodCondition,
  PodList as V1PodList,
  PodSpec as V1PodSpec,
  PodStatus as V1PodStatus,
  Probe as V1Probe,
  ResourceFieldSelector as V1ResourceFieldSelector,
  Volume as V1Volume,
} from 'kubernetes-types/core/v1.js';
export type { ObjectMeta as V1ObjectMeta } from 'kubernetes-types/meta/v1.js';

/**
 * One change of a watch (`?watch=1`), as the API server sends it, a JSON object a line: what the
 * agent's server writes and the CLI reads. (`kubernetes-types`' own `WatchEvent` leaves the object
 * untyped.)
 */
export interface WatchEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: T;
}
