import { KubeletError } from './errors.js';
import type { Container, ContainerManifest, DownwardFile, EnvFromSource, ObjectKeyRef, Volume } from './manifest.js';
import { formatLabelMap, podFieldValue, resourceFieldValue, type EnvContext } from './container-env.js';
import { podNameOf } from './naming.js';

/**
 * The kinds of object a source may give beside its pods: ConfigMaps and Secrets, as
 * `podman kube play` reads them; and two that only a source backed by an API server gives (see
 * `ApiPodSource` in `@kubelet-ts/cluster`):
 * - `ServiceAccountToken`: a token issued for one pod (named by `serviceAccountTokenName`), its
 *   one key `token`;
 * - `ServiceEnvironment`: the variables of services, as the kubelet makes them
 *   (`envvars.FromServices`): `links` in a namespace, those of its services; `master` in
 *   `default`, those of the API server, which every container gets.
 */
export type ObjectKind = 'ConfigMap' | 'Secret' | 'ServiceAccountToken' | 'ServiceEnvironment';

/** The names of the `ServiceEnvironment` objects (see `ObjectKind`). */
export const SERVICE_LINKS = 'links';
/** The name of the `ServiceEnvironment` object (in `default`) with the API server's variables, which every container gets. */
export const MASTER_SERVICE = 'master';

/**
 * A v1 ConfigMap or Secret a source gives beside its pods (a `kind: ConfigMap` document in the
 * same file, directory, URL or etcd prefix): what the pods of that source read by name, through
 * volumes (`Volume.files`) and variables (`configMapKeyRef`, `secretKeyRef`, `envFrom`).
 */
export interface SourceObject {
  readonly kind: ObjectKind;
  /** `default` when the document gives none. */
  readonly namespace: string;
  readonly name: string;
  /** Each key's bytes: a ConfigMap's `data` and `binaryData`, a Secret's `data` (decoded) and `stringData`. */
  readonly data: Readonly<Record<string, Uint8Array>>;
}

/** The objects the pods of one source may read. */
export interface ObjectLookup {
  get(kind: ObjectKind, namespace: string, name: string): SourceObject | undefined;
}

/** A lookup over `objects`; of two with one kind, namespace and name, the first. */
export function objectLookupOf(objects: readonly SourceObject[]): ObjectLookup {
  const byKey = new Map<string, SourceObject>();
  for (const o of objects) {
    const key = objectKey(o.kind, o.namespace, o.name);
    if (!byKey.has(key)) byKey.set(key, o);
  }
  return { get: (kind, namespace, name) => byKey.get(objectKey(kind, namespace, name)) };
}

/** The key of an object among its source's: its kind, namespace and name. */
export function objectKey(kind: ObjectKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** A lookup that holds nothing: a source that gives no objects. */
export const NO_OBJECTS: ObjectLookup = { get: () => undefined };

/** One file of a volume of files, as the agent writes it. */
export interface VolumeFile {
  /** Relative, normal, no `..` (validation makes sure). */
  readonly path: string;
  readonly data: Uint8Array;
  readonly mode: number;
}

/** An object by kind and name; a token with what its request asks. */
export interface ObjectRef {
  readonly kind: ObjectKind;
  readonly namespace: string;
  readonly name: string;
  /** For a `ServiceAccountToken`: what to ask the API server (its TokenRequest). */
  readonly token?: ServiceAccountTokenRequest;
}

/** A token to ask for: the service account's, bound to the pod, for the audience, valid that long. */
export interface ServiceAccountTokenRequest {
  readonly serviceAccount: string;
  readonly audience?: string;
  readonly expirationSeconds: number;
  readonly pod: { readonly name: string; readonly uid: string };
}

/** The name of a pod's token among its source's objects: one per pod, audience and lifetime. */
export function serviceAccountTokenName(podUid: string, token: { readonly audience?: string; readonly expirationSeconds: number }): string {
  return `${podUid}/${token.expirationSeconds}/${token.audience ?? ''}`;
}

/**
 * Every ConfigMap and Secret `manifest` reads (its volumes of files, its image pull secrets, and its
 * containers' and init containers' `env` and `envFrom`), each once, optional ones included: what a source that fetches
 * objects for its pods must fetch (the kubelet's managers register the same set for a pod).
 */
export function referencedObjects(manifest: ContainerManifest): ObjectRef[] {
  const namespace = manifest.namespace ?? 'default';
  const found = new Map<string, ObjectRef>();
  const add = (kind: ObjectKind, name: string) => found.set(objectKey(kind, namespace, name), { kind, namespace, name });
  const uid = podUidOf(manifest);
  for (const volume of manifest.volumes)
    for (const source of volume.files?.sources ?? []) {
      if (source.configMap !== undefined) add('ConfigMap', source.configMap.name);
      if (source.secret !== undefined) add('Secret', source.secret.name);
      const token = source.serviceAccountToken;
      if (token !== undefined) {
        const name = serviceAccountTokenName(uid, token);
        found.set(objectKey('ServiceAccountToken', namespace, name), {
          kind: 'ServiceAccountToken',
          namespace,
          name,
          token: {
            serviceAccount: manifest.serviceAccountName ?? 'default',
            ...(token.audience === undefined ? {} : { audience: token.audience }),
            expirationSeconds: token.expirationSeconds,
            pod: { name: podNameOf(manifest.id, manifest.namespace), uid },
          },
        });
      }
    }
  for (const name of manifest.imagePullSecrets ?? []) add('Secret', name);
  for (const container of [...(manifest.initContainers ?? []), ...manifest.containers]) {
    for (const e of container.env) {
      if (e.valueFrom?.configMapKeyRef !== undefined) add('ConfigMap', e.valueFrom.configMapKeyRef.name);
      if (e.valueFrom?.secretKeyRef !== undefined) add('Secret', e.valueFrom.secretKeyRef.name);
    }
    for (const from of container.envFrom ?? []) {
      if (from.configMapRef !== undefined) add('ConfigMap', from.configMapRef.name);
      if (from.secretRef !== undefined) add('Secret', from.secretRef.name);
    }
  }
  return [...found.values()];
}

/**
 * The services whose variables `manifest`'s containers get (see `ObjectKind`): the API server's
 * always, those of its namespace unless `enableServiceLinks` is false. What a source backed by an
 * API server gives beside its pods, with `referencedObjects`.
 */
export function serviceEnvironmentRefs(manifest: ContainerManifest): ObjectRef[] {
  const master: ObjectRef = { kind: 'ServiceEnvironment', namespace: 'default', name: MASTER_SERVICE };
  if (manifest.enableServiceLinks === false) return [master];
  return [{ kind: 'ServiceEnvironment', namespace: manifest.namespace ?? 'default', name: SERVICE_LINKS }, master];
}

/**
 * The service variables a container of `manifest` gets, from its source's `ServiceEnvironment`
 * objects (none from a source that gives none): its namespace's services unless
 * `enableServiceLinks` is false, the API server's over them (the kubelet's `getServiceEnvVarMap`).
 */
export function serviceVariables(manifest: ContainerManifest, objects: ObjectLookup): Record<string, string> {
  const env: Record<string, string> = {};
  const sets =
    manifest.enableServiceLinks === false
      ? [objects.get('ServiceEnvironment', 'default', MASTER_SERVICE)]
      : [
          objects.get('ServiceEnvironment', manifest.namespace ?? 'default', SERVICE_LINKS),
          objects.get('ServiceEnvironment', 'default', MASTER_SERVICE),
        ];
  for (const set of sets) for (const [name, value] of Object.entries(set?.data ?? {})) env[name] = TEXT.decode(value);
  return env;
}

/** The pod's uid as its source gave it (an API pod's `metadata.uid`), else its id: what its tokens are bound to. */
function podUidOf(manifest: ContainerManifest): string {
  return manifest.uuid ?? manifest.id;
}

/** Whether the container reads a ConfigMap or Secret into its variables. */
export function readsObjects(container: Container): boolean {
  return (
    (container.envFrom?.length ?? 0) > 0 ||
    container.env.some((e) => e.valueFrom?.configMapKeyRef !== undefined || e.valueFrom?.secretKeyRef !== undefined)
  );
}

/** Whether the volume holds a Secret's keys or a token (a Secret's files default to 0400; neither is ever shown). */
export function holdsSecret(volume: Volume): boolean {
  return volume.files?.sources.some((s) => s.secret !== undefined || s.serviceAccountToken !== undefined) === true;
}

const TEXT = new TextDecoder();
const ENCODE = new TextEncoder();

/**
 * A key of a ConfigMap or Secret for a variable; `undefined` when it is optional and missing.
 * Throws `NotFound` naming the object and key, and what to do, when a required one is missing.
 */
export function objectKeyValue(kind: ObjectKind, ref: ObjectKeyRef, namespace: string, objects: ObjectLookup): string | undefined {
  const object = objects.get(kind, namespace, ref.name);
  const bytes = object?.data[ref.key];
  if (bytes !== undefined && Object.hasOwn(object!.data, ref.key)) return TEXT.decode(bytes);
  if (ref.optional === true) return undefined;
  throw missing(kind, namespace, ref.name, object === undefined ? undefined : ref.key);
}

/** The variables of a container's `envFrom`, in order (a later source wins); keys that are not variable names are left out, as the kubelet leaves them. */
export function envFromValues(sources: readonly EnvFromSource[], namespace: string, objects: ObjectLookup): Record<string, string> {
  const env: Record<string, string> = {};
  for (const s of sources) {
    const [kind, ref] = s.configMapRef !== undefined ? (['ConfigMap', s.configMapRef] as const) : (['Secret', s.secretRef!] as const);
    const object = objects.get(kind, namespace, ref.name);
    if (object === undefined) {
      if (ref.optional === true) continue;
      throw missing(kind, namespace, ref.name, undefined);
    }
    for (const key of Object.keys(object.data).sort()) {
      const name = `${s.prefix ?? ''}${key}`;
      if (ENV_NAME.test(name)) env[name] = TEXT.decode(object.data[key]!);
    }
  }
  return env;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The files of a volume of files (`Volume.files`), as the kubelet projects them: each ConfigMap or
 * Secret key a file (or only its `items`, at their paths), each downward item a file; a later
 * source's file of the same path wins. Modes: the item's, else `defaultMode`, else 0400 for a
 * Secret's key and 0644 for the rest. Throws `NotFound` naming the object (or its key) when a
 * required one is missing.
 */
export function volumeFilesOf(manifest: ContainerManifest, volume: Volume, objects: ObjectLookup, context: EnvContext): VolumeFile[] {
  const files = new Map<string, VolumeFile>();
  const spec = volume.files;
  if (spec === undefined) return [];
  const namespace = manifest.namespace ?? 'default';
  for (const source of spec.sources) {
    if (source.downwardAPI !== undefined) {
      for (const item of source.downwardAPI.items) {
        const data = ENCODE.encode(downwardValue(manifest, item, context));
        files.set(item.path, { path: item.path, data, mode: item.mode ?? spec.defaultMode ?? 0o644 });
      }
      continue;
    }
    if (source.serviceAccountToken !== undefined) {
      const token = source.serviceAccountToken;
      const object = objects.get('ServiceAccountToken', namespace, serviceAccountTokenName(podUidOf(manifest), token));
      const data = object?.data['token'];
      if (data === undefined)
        throw new KubeletError(
          'NotFound',
          `volume "${volume.name}": no token of service account "${manifest.serviceAccountName ?? 'default'}" has been issued for the pod yet (audience ${JSON.stringify(token.audience ?? '')}); its source asks the API server for one`,
        );
      files.set(token.path, { path: token.path, data, mode: spec.defaultMode ?? 0o644 });
      continue;
    }
    const [kind, ref] = source.configMap !== undefined ? (['ConfigMap', source.configMap] as const) : (['Secret', source.secret!] as const);
    const fallback = spec.defaultMode ?? (kind === 'Secret' ? 0o400 : 0o644);
    const object = objects.get(kind, namespace, ref.name);
    if (object === undefined) {
      if (ref.optional === true) continue;
      throw missing(kind, namespace, ref.name, undefined, volume.name);
    }
    const items = ref.items ?? Object.keys(object.data).map((key) => ({ key, path: key }));
    for (const item of items) {
      const data = Object.hasOwn(object.data, item.key) ? object.data[item.key] : undefined;
      if (data === undefined) {
        if (ref.optional === true) continue;
        throw missing(kind, namespace, ref.name, item.key, volume.name);
      }
      files.set(item.path, { path: item.path, data, mode: ('mode' in item ? item.mode : undefined) ?? fallback });
    }
  }
  return [...files.values()];
}

function downwardValue(manifest: ContainerManifest, item: DownwardFile, context: EnvContext): string {
  if (item.resourceFieldRef !== undefined) {
    const ref = item.resourceFieldRef;
    const target = [...(manifest.initContainers ?? []), ...manifest.containers].find((c) => c.name === ref.containerName);
    return target === undefined ? '' : resourceFieldValue(ref.resource, target, ref.divisor, context);
  }
  const path = item.fieldRef?.fieldPath ?? '';
  if (path === 'metadata.labels') return formatLabelMap(manifest.labels);
  if (path === 'metadata.annotations') return formatLabelMap(manifest.annotations);
  return podFieldValue(path, manifest, context);
}

function missing(kind: ObjectKind, namespace: string, name: string, key: string | undefined, volume?: string): KubeletError {
  const what = kind === 'ConfigMap' ? 'configmap' : 'secret';
  const where = volume === undefined ? '' : `volume "${volume}": `;
  const message =
    key === undefined
      ? `${where}${what} "${name}" not found (namespace ${namespace}) among the objects its source gives beside the pod; add a kind: ${kind} document named ${name} to that source, or mark the reference optional: true`
      : `${where}key "${key}" not found in ${what} "${name}" (namespace ${namespace}); add it to the ${kind}, or mark the reference optional: true`;
  return new KubeletError('NotFound', message);
}
