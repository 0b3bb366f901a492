import { InvalidArgumentError } from 'commander';
import { isLabelKey, isLabelValue, normalSysctlName, sysctlNamespace, SYSCTL_NAME } from '@kubelet-ts/core';

/** `--node-labels a=b,c=d` (the kubelet's form): each a label key and value. */
export function nodeLabelsFlag(value: string, previous: Record<string, string> | undefined): Record<string, string> {
  const labels: Record<string, string> = { ...previous };
  for (const pair of value.split(',').filter((p) => p !== '')) {
    const eq = pair.indexOf('=');
    const [key, label] = eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
    if (!isLabelKey(key) || !isLabelValue(label))
      throw new InvalidArgumentError(`${JSON.stringify(pair)} is not key=value with a label key and a label value (e.g. disktype=ssd)`);
    labels[key] = label;
  }
  return labels;
}

/**
 * `--allowed-unsafe-sysctls a,b*` (the kubelet's form, repeatable): each a sysctl name, or a prefix
 * ending in `*`, of a namespace a pod has of its own (network, IPC); `/` separators read as `.`.
 */
export function allowedSysctlsFlag(value: string, previous: readonly string[] | undefined): string[] {
  const patterns = [...(previous ?? [])];
  for (const written of value.split(',').filter((p) => p !== '')) {
    const pattern = normalSysctlName(written);
    const name = pattern.endsWith('*') ? pattern.slice(0, -1) : pattern;
    const namespaced = sysctlNamespace(name) !== undefined;
    if (!SYSCTL_NAME.test(name.replace(/[._]$/, '')) || !namespaced)
      throw new InvalidArgumentError(
        `${JSON.stringify(written)} is not a sysctl of a pod's network or IPC namespace (e.g. net.core.somaxconn, kernel.msg*)`,
      );
    patterns.push(pattern);
  }
  return patterns;
}
