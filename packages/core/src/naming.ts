import { createHash, randomBytes } from 'node:crypto';
import type { ContainerManifest } from './manifest.js';

/** Labels on everything the agent creates. A container without `MANIFEST_ID` is foreign. */
export const Labels = {
  manifestId: 'io.kubelet-ts.manifest-id',
  containerName: 'io.kubelet-ts.container-name',
  specHash: 'io.kubelet-ts.spec-hash',
  source: 'io.kubelet-ts.source',
  /** The agent's hostname, so that several agents can share one engine without touching each other. */
  node: 'io.kubelet-ts.node',
  /** How many times this manifest container was restarted before this container was made. */
  restartCount: 'io.kubelet-ts.restart-count',
  /** Consecutive restarts after short runs: the crash back-off step. Survives an agent restart. */
  crashStreak: 'io.kubelet-ts.crash-streak',
  /** The grace period the manifest gave, for stopping the container after its manifest is gone. */
  gracePeriod: 'io.kubelet-ts.grace-period',
  /** On a pod sandbox: the manifest id it holds the namespace of (the key the first releases used). */
  sandbox: 'io.kubelet-ts.pod-infra',
  /** On a pod sandbox: `sandboxHash` of the ports it was made with. */
  sandboxHash: 'io.kubelet-ts.pod-ports-hash',
  /** On containers and sandboxes of a pod that has one: its v1 `metadata.namespace`, shown, never matched on. */
  namespace: 'io.kubelet-ts.namespace',
  /**
   * On a container with a `preStop` hook: the hook as JSON, its port a number, so that it runs before
   * the stop even when the manifest is gone (the kubelet's `io.kubernetes.container.preStopHandler`).
   */
  preStop: 'io.kubelet-ts.pre-stop',
  /**
   * The kubelet's own labels, on every container and sandbox the agent makes (since issue 42): the
   * pod's uid (see `podUid`), namespace and name, as a cluster knows the pod. A container made by an
   * earlier release has none of them; it is adopted as it is.
   */
  podUid: 'io.kubernetes.pod.uid',
  podNamespace: 'io.kubernetes.pod.namespace',
  podName: 'io.kubernetes.pod.name',
} as const;

/** The kubelet's labels for a pod: its uid, namespace and name (see `Labels.podUid`). */
export function podIdentityLabels(manifest: Pick<ContainerManifest, 'id' | 'namespace'>, uid: string): Record<string, string> {
  return {
    [Labels.podUid]: uid,
    [Labels.podNamespace]: manifest.namespace ?? 'default',
    [Labels.podName]: podNameOf(manifest.id, manifest.namespace),
  };
}

/**
 * Whether `c` (a container or a sandbox) belongs to another pod than the one of `uid` under the
 * same id: one deleted and made again under its name (a new uid). Only a uid the source gave
 * (`manifest.uuid`) is compared: a derived one is the same for the same node, source and id. One
 * made before the label existed is the pod's own.
 */
export function ofAnotherUid(c: { readonly labels: Readonly<Record<string, string>> }, uid: string | undefined): boolean {
  if (uid === undefined) return false;
  const theirs = c.labels[Labels.podUid];
  return theirs !== undefined && theirs !== uid;
}

/** The identity of a managed container, read from its labels. */
export interface ContainerIdentity {
  readonly podId: string;
  readonly container: string;
  readonly specHash: string;
  readonly source: string;
  readonly node: string;
}

/** RFC 1123 label: lower-case letters, digits and '-', at most 63, starting and ending alphanumeric. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * Whether `s` is a DNS label: what container, volume and port names must be (the validator's rule),
 * and so what the agent writes into labels and host paths. The one definition of it. Manifest ids
 * may be longer, dotted subdomains: see `isManifestId`.
 */
export function isDnsLabel(s: string): boolean {
  return DNS_LABEL.test(s);
}

// RFC 1123 subdomain: DNS labels joined by '.'. As in the 2014 API (and Kubernetes since), a label
// inside it is not held to 63 characters; the whole is held to 253.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_SUBDOMAIN = 253;

/**
 * Whether `s` is a DNS subdomain of at most 253 characters: what a manifest id may be (the 2014
 * API's DNS_SUBDOMAIN) and a node name must be. It starts and ends with a letter or digit and has
 * no '/', so it can never be `.`, `..` or a path: it is safe as a directory name and a label value.
 */
export function isDnsSubdomain(s: string): boolean {
  return s.length <= MAX_SUBDOMAIN && DNS_SUBDOMAIN.test(s);
}

/** Whether `s` can be a manifest id (a pod's name on this host): a DNS subdomain. */
export function isManifestId(s: string): boolean {
  return isDnsSubdomain(s);
}

/**
 * A pod's name as the kubelet shows it (`metadata.name`, the `{pod}` of `/containerLogs`): its
 * manifest id without the `.<namespace>` that a v1 Pod's id carries (`v1PodId`), so `etcd` for
 * the id `etcd.kube-system` in `kube-system`, and `a.b` for the id `a.b.default` in `default` (a
 * dotted name in `default`). A 2014 manifest's (no namespace) is its id, as is an undotted name's
 * in `default`.
 */
export function podNameOf(id: string, namespace: string | undefined): string {
  if (namespace === undefined || !id.endsWith(`.${namespace}`)) return id;
  const name = id.slice(0, -(namespace.length + 1));
  return namespace === 'default' && !name.includes('.') ? id : name;
}

/**
 * A pod's key as a cluster knows it: its namespace, its name and its uid, each a field (never a
 * joined string). Two pods with the same namespace and name but another uid are two pods: the
 * later one replaces the earlier. The manifest id is this key's host form (see `v1PodId` in
 * `@kubelet-ts/manifest`), one-to-one with (namespace, name).
 */
export interface PodKey {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** The key of a manifest whose uid is `uid` (see `podUid`): a 2014 manifest's namespace is `default`. */
export function podKeyOf(manifest: Pick<ContainerManifest, 'id' | 'namespace'>, uid: string): PodKey {
  return { namespace: manifest.namespace ?? 'default', name: podNameOf(manifest.id, manifest.namespace), uid };
}

/**
 * The id of a manifest written without one, as the 2014 agent named such pods after where they
 * came from: `<name>[-<position>]-<12 hex>`, where `name` is made readable (lower case, runs of
 * anything else turned into '-', at most 40 characters) and the hex digits are a hash of `origin`
 * (a file's path, a URL, an etcd key) and the position. The same origin and position always give
 * the same id, so a re-read or an agent restart names the pod the same and restarts nothing; two
 * files, or two positions in one list, never share one. The result is a DNS label, so it is also
 * a hostname and a directory name.
 */
export function derivedManifestId(name: string, origin: string, position?: number): string {
  const readable =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, 40)
      .replace(/^-+|-+$/g, '') || 'manifest';
  const where = position === undefined ? origin : `${origin}#${position}`;
  const digest = createHash('sha256').update(where).digest('hex').slice(0, 12);
  return `${readable}${position === undefined ? '' : `-${position}`}-${digest}`;
}

// Spec hashes, as the agent writes them (see `buildContainerSpec`): `v<version>-<16 hex>`.
const SPEC_HASH = /^v[0-9]{1,4}-[0-9a-f]{16}$/;

/**
 * Whether the labels are ones this agent could have written: our label keys with values of the
 * form the agent gives them. Anything else (no labels, some of them, garbage values) is foreign,
 * so a container someone labelled by hand is never stopped, removed or inspected. Allocates
 * nothing: the planner asks this of every container on every pass.
 */
function wellFormed(labels: Readonly<Record<string, string>>): boolean {
  const podId = labels[Labels.manifestId];
  const container = labels[Labels.containerName];
  const hash = labels[Labels.specHash];
  return (
    podId !== undefined &&
    container !== undefined &&
    hash !== undefined &&
    isManifestId(podId) &&
    isDnsLabel(container) &&
    SPEC_HASH.test(hash)
  );
}

/** Whether the container is one the agent on `node` manages: the one test every code path uses. */
export function isManagedBy(labels: Readonly<Record<string, string>>, node: string): boolean {
  return node !== '' && labels[Labels.node] === node && wellFormed(labels);
}

/** Reads our labels; `undefined` for a foreign container (see `isManagedBy` for the node). */
export function identityOf(labels: Readonly<Record<string, string>>): ContainerIdentity | undefined {
  if (!wellFormed(labels)) return undefined;
  return {
    podId: labels[Labels.manifestId]!,
    container: labels[Labels.containerName]!,
    specHash: labels[Labels.specHash]!,
    source: labels[Labels.source] ?? '',
    node: labels[Labels.node] ?? '',
  };
}

/**
 * Why `name` cannot name a node, or `undefined` when it can: a lower-case DNS name of at most 253
 * characters, as Kubernetes requires. It becomes a label value the engine is filtered by and a
 * segment of the node's etcd key (`/registry/hosts/<name>/kubelet`), where a `/` or `..` would
 * name another host's key.
 */
export function nodeNameProblem(name: string): string | undefined {
  if (isDnsSubdomain(name)) return undefined;
  return `invalid hostname ${JSON.stringify(name.slice(0, 300))}: use a DNS name (lower-case letters, digits, '-' and '.', at most 253 characters), e.g. with --hostname-override`;
}

// The 2014 escaping rule: '_' becomes '___' and '-' becomes '_-_', so an escaped part never
// contains '--' and the separator stays unambiguous.
export function escapeNamePart(part: string): string {
  return part.replaceAll('_', '___').replaceAll('-', '_-_');
}

export function unescapeNamePart(part: string): string {
  return part.replaceAll('_-_', '-').replaceAll('___', '_');
}

/**
 * `<container>--<manifest>--<8 hex>`, reversible with `parseContainerName`. A manifest id may hold
 * dots (a DNS subdomain): they are left as they are, since Docker names allow them and no escaped
 * part can contain `--` because of one.
 */
export function buildContainerName(podId: string, container: string, suffix = randomBytes(4).toString('hex')): string {
  return `${escapeNamePart(container)}--${escapeNamePart(podId)}--${suffix}`;
}

/** Decodes a name made by `buildContainerName` (a leading `/`, as Docker reports it, is allowed). */
export function parseContainerName(name: string): { podId: string; container: string; suffix: string } | undefined {
  const parts = name.replace(/^\//, '').split('--');
  if (parts.length !== 3) return undefined;
  const [container, podId, suffix] = parts as [string, string, string];
  if (container === '' || podId === '' || !/^[0-9a-f]{8}$/.test(suffix)) return undefined;
  return { podId: unescapeNamePart(podId), container: unescapeNamePart(container), suffix };
}

/**
 * A pod's uid, as `/pods` shows it: the manifest's `uuid` when it gives one; else, as the kubelet
 * derives a static pod's, a hash of where the pod came from (the node, the source, the id), so the
 * same pod keeps its uid across re-reads and agent restarts.
 */
export function podUid(
  manifest: Pick<ContainerManifest, 'id' | 'uuid'>,
  context: { readonly node: string; readonly source: string },
): string {
  return (
    manifest.uuid ??
    createHash('sha256').update(`host:${context.node}\nsource:${context.source}\nid:${manifest.id}`).digest('hex').slice(0, 32)
  );
}
