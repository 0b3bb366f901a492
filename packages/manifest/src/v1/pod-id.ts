import { isManifestId } from '@kubelet-ts/core';

/**
 * The manifest id of a v1 Pod: the host form of its key (namespace, name), which names its
 * containers, sandbox and directories. It is one-to-one with the key, so two pods of a cluster are
 * never one pod on the host:
 * - `name` in `default` (or no namespace) when the name has no dot: what 2014 manifests and every
 *   release before issue 42 wrote, so such a pod keeps its containers across an upgrade;
 * - `name.default` in `default` when the name has a dot, so that `a.b` in `default` is not `a` in `b`;
 * - `name.namespace` in any other namespace (a kubeadm manifest in `kube-system` keeps one id).
 * A namespace is a DNS label (no dot), so the last segment of a dotted id is always its namespace.
 * Undefined when the result is not a manifest id (a DNS subdomain of at most 253 characters).
 */
export function v1PodId(name: string, namespace?: string): string | undefined {
  const id = joinV1PodId(name, namespace);
  return isManifestId(id) ? id : undefined;
}

/** `v1PodId` before the check, for the decoder: validation then says what is wrong with it. */
export function joinV1PodId(name: string, namespace: string | undefined): string {
  const inDefault = namespace === undefined || namespace === '' || namespace === 'default';
  if (inDefault) return name.includes('.') ? `${name}.default` : name;
  return `${name}.${namespace}`;
}
