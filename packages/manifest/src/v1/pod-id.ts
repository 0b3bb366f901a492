import { isManifestId } from '@kubelet-ts/core';

/**
 * The manifest id of a v1 Pod: its `metadata.name`, followed by `.<namespace>` unless the
 * namespace is absent or `default`, so that two pods of one name in two namespaces are two pods
 * on the host (and a kubeadm manifest in `kube-system` keeps one id across restarts). Undefined
 * when the result is not a manifest id (a DNS subdomain of at most 253 characters).
 */
export function v1PodId(name: string, namespace?: string): string | undefined {
  const id = joinV1PodId(name, namespace);
  return isManifestId(id) ? id : undefined;
}

/** `v1PodId` before the check, for the decoder: validation then says what is wrong with it. */
export function joinV1PodId(name: string, namespace: string | undefined): string {
  return namespace === undefined || namespace === '' || namespace === 'default' ? name : `${name}.${namespace}`;
}
