export type KubeletEventType =
  | 'ContainerCreated'
  | 'ContainerStarted'
  | 'ContainerStopped'
  | 'ContainerRemoved'
  | 'ContainerFailed'
  | 'ContainerExited'
  | 'ContainerRestarted'
  | 'ContainerKilled'
  | 'SandboxCreated'
  | 'SandboxRemoved'
  | 'BackOff'
  | 'ProbeFailed'
  /** A readiness probe passed successThreshold times in a row (reported only: nothing is acted on). */
  | 'ContainerReady'
  /** A ready container's readiness probe failed failureThreshold times in a row (reported only). */
  | 'ContainerNotReady'
  | 'ImagePulled'
  | 'ImagePullFailed'
  | 'ManifestRejected'
  | 'ManifestConflict'
  /** A manifest was accepted, but spells a field the deprecated 2014 way (`volumeMounts[].path`, `env[].key`). */
  | 'DeprecatedField'
  | 'SourceError'
  | 'SourceRestarted';

export interface KubeletEvent {
  readonly type: KubeletEventType;
  /** Milliseconds since the epoch, from the agent's clock. */
  readonly time: number;
  readonly podId?: string;
  readonly container?: string;
  readonly source?: string;
  readonly reason?: string;
  readonly message: string;
}

/** Where the agent records what it did. `emit` must not throw; an async sink handles its own errors. */
export interface EventSink {
  emit(event: KubeletEvent): void;
}
