/**
 * The container manifest of 2014 (what later became a pod), after validation and normalisation.
 * Optional fields stay absent rather than being filled with defaults, so that the spec hash of an
 * old manifest does not change when a later version adds a field.
 */
export interface ContainerManifest {
  readonly version: 'v1beta1';
  /** Unique per host; a DNS label. */
  readonly id: string;
  readonly volumes: readonly Volume[];
  readonly containers: readonly Container[];
}

export interface Volume {
  readonly name: string;
}

export type Protocol = 'TCP' | 'UDP';

export interface Port {
  readonly name?: string;
  readonly containerPort: number;
  /** Absent (or 0 in the input) means the port is not published on the host. */
  readonly hostPort?: number;
  readonly protocol: Protocol;
}

export interface EnvVar {
  readonly name: string;
  readonly value: string;
}

export interface VolumeMount {
  readonly name: string;
  readonly mountPath: string;
  readonly readOnly: boolean;
}

export interface Container {
  readonly name: string;
  readonly image: string;
  readonly command?: readonly string[];
  readonly workingDir?: string;
  readonly ports: readonly Port[];
  readonly env: readonly EnvVar[];
  /** Memory limit in bytes. */
  readonly memory?: number;
  /** Relative CPU shares. */
  readonly cpu?: number;
  readonly volumeMounts: readonly VolumeMount[];
}

/** A manifest together with the source that asked for it. */
export interface DesiredPod {
  readonly manifest: ContainerManifest;
  readonly source: string;
}
