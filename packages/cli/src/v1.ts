/**
 * The parts of the agent's answers the client commands read: a v1 `Pod` (`GET /pods`) and a v1
 * `Event` (`GET /events`), as the shared v1 types of `@kubelet-ts/core` (every field optional: the
 * client shows what an answer has and `<none>` or nothing for the rest), and the `SourceList`
 * (`GET /sources`), which is this agent's own.
 */
export type { V1Container, V1ContainerState, V1ContainerStatus, V1EnvVarSource, V1Event, V1Probe, WatchEvent } from '@kubelet-ts/core';
import type { V1ObjectMeta, V1Pod as CoreV1Pod } from '@kubelet-ts/core';

/** A pod as the agent's `/pods` lists it: the shared v1 `Pod`, whose name the agent always writes. */
export type V1Pod = CoreV1Pod & { metadata: V1ObjectMeta & { name: string } };

export interface SourceItem {
  readonly name: string;
  readonly seen?: boolean;
  readonly manifests?: number;
  readonly lastError?: string;
  readonly down?: string;
  readonly rejected?: ReadonlyArray<{ readonly message: string; readonly count?: number; readonly lastSeen?: string }>;
}

/** The pod's namespace: `default` when its metadata does not say. */
export const namespaceOf = (pod: Pick<V1Pod, 'metadata'>): string => pod.metadata.namespace ?? 'default';
