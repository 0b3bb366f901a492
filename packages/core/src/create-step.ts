import { readsPodIP, type PodRuntimeFields } from './container-env.js';
import type { Container, ContainerManifest, Volume } from './manifest.js';
import { podUid } from './naming.js';
import { NO_OBJECTS, readsObjects, serviceVariables, volumeFilesOf, type ObjectLookup, type VolumeFile } from './objects.js';
import type { PlanAction } from './plan-types.js';
import { pullCredentialsFor } from './pull-credentials.js';
import { buildContainerSpec, withPortNumber, type SpecContext } from './spec.js';

type CreateAction = Extract<PlanAction, { type: 'create' }>;

/**
 * What a create step leaves to its execution: the spec again with the sandbox's IP (when `context`
 * has none yet and the container reads it) and its source's objects, the files of the volumes of
 * files it mounts, its pod's pull credentials for its image, and its postStart hook. Nothing for a
 * container that needs none of them.
 */
export function executionParts(
  manifest: ContainerManifest,
  container: Container,
  context: SpecContext,
  objects: ObjectLookup | undefined,
): Pick<CreateAction, 'respec' | 'readsPodIP' | 'volumeFiles' | 'pullCredentials' | 'postStart'> {
  const podIP = context.podIP === undefined && readsPodIP(container);
  const mounted = new Set(container.volumeMounts.map((m) => m.name));
  const fileVolumes = manifest.volumes.filter((v) => v.files !== undefined && mounted.has(v.name));
  const lookup = objects ?? NO_OBJECTS;
  return {
    // The services' variables come from the objects too (a source backed by an API server gives them).
    ...(podIP || readsObjects(container) || Object.keys(serviceVariables(manifest, lookup)).length > 0
      ? { respec: (fields: PodRuntimeFields) => buildContainerSpec(manifest, container, { ...context, ...fields, objects: lookup }) }
      : {}),
    ...(podIP ? { readsPodIP: true } : {}),
    ...(fileVolumes.length === 0 ? {} : { volumeFiles: () => podVolumeFiles(manifest, fileVolumes, context, lookup) }),
    ...((manifest.imagePullSecrets?.length ?? 0) === 0
      ? {}
      : { pullCredentials: () => pullCredentialsFor(container.image, manifest, lookup) }),
    ...(container.lifecycle?.postStart === undefined ? {} : { postStart: withPortNumber(container, container.lifecycle.postStart) }),
  };
}

/** The files of a pod's volumes of files, and who owns them. */
export interface PodVolumeFiles {
  /** The pod's `runAsUser` and `fsGroup`, when it sets them: the files' owner and group. */
  readonly owner: { readonly uid?: number; readonly gid?: number };
  readonly volumes: ReadonlyMap<string, readonly VolumeFile[]>;
}

/**
 * The files of `volumes` (volumes of files of `manifest`) as they are now (see `volumeFilesOf`).
 * Throws `NotFound` naming the first required object or key that is missing.
 */
export function podVolumeFiles(
  manifest: ContainerManifest,
  volumes: readonly Volume[],
  context: SpecContext,
  objects: ObjectLookup,
): PodVolumeFiles {
  const env = { ...context, podUid: podUid(manifest, context) };
  const security = manifest.securityContext;
  return {
    owner: {
      ...(security?.runAsUser === undefined ? {} : { uid: security.runAsUser }),
      ...(security?.fsGroup === undefined ? {} : { gid: security.fsGroup }),
    },
    volumes: new Map<string, readonly VolumeFile[]>(volumes.map((v) => [v.name, volumeFilesOf(manifest, v, objects, env)])),
  };
}
