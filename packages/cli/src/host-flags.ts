import { readFile } from 'node:fs/promises';
import { InvalidArgumentError, Option } from 'commander';
import { ceilMillis, ceilUnits, parseQuantity } from '@kubelet-ts/manifest';
import {
  isLabelKey,
  isLabelValue,
  normalSysctlName,
  parseResolvConf,
  sysctlNamespace,
  SYSCTL_NAME,
  type Logger,
  type ResolverConfig,
} from '@kubelet-ts/core';

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

/**
 * The host's resolver from `--resolv-conf` ('' for none). A file that cannot be read is said once
 * and taken as empty, as the kubelet goes on without it: a pod's dnsConfig is then all it gets.
 */
export async function hostDnsOf(path: string, logger: Logger): Promise<ResolverConfig | undefined> {
  if (path === '') return undefined;
  try {
    return parseResolvConf(await readFile(path, 'utf8'));
  } catch (error) {
    logger.warn(
      { flag: '--resolv-conf', path, err: error },
      `--resolv-conf ${path} cannot be read (${(error as Error).message}): a pod's dnsConfig will be all its resolver gets; give --resolv-conf '' to say so, or the right file`,
    );
    return undefined;
  }
}

/** What the agent (and `--runonce`) take of the host's files: its resolver (`--resolv-conf`) and seccomp directory. */
export async function hostFilesOf(
  options: { readonly resolvConf: string; readonly seccompProfileRoot: string },
  logger: Logger,
): Promise<{ readonly hostDns?: ResolverConfig; readonly seccompProfileRoot: string }> {
  const hostDns = await hostDnsOf(options.resolvConf, logger);
  return { ...(hostDns === undefined ? {} : { hostDns }), seccompProfileRoot: options.seccompProfileRoot };
}

/** `--resolv-conf` (the kubelet's flag): the host's resolver file. */
export function resolvConfOption(): Option {
  return new Option(
    '--resolv-conf <path>',
    "the host's resolver settings, which a pod's dnsConfig adds to (dnsPolicy Default, and ClusterFirst: there is no cluster DNS); '' for none. A pod without dnsConfig gets the engine's copy of the host's resolv.conf",
  ).default('/etc/resolv.conf');
}

/** `--seccomp-profile-root` (the kubelet's flag until 1.23; today `<root-dir>/seccomp`): where Localhost profiles are. */
export function seccompProfileRootOption(): Option {
  return new Option(
    '--seccomp-profile-root <dir>',
    "where a pod's Localhost seccomp profiles are: securityContext.seccompProfile.localhostProfile names a JSON file under it (default: <root-dir>/seccomp)",
  );
}

/** `--kube-reserved` / `--system-reserved` (the kubelet's form): what is kept from the pods, in thousandths of a CPU and bytes. */
export interface Reserved {
  readonly cpuMillis: number;
  readonly memoryBytes: number;
}

/**
 * `--kube-reserved cpu=100m,memory=256Mi` (the kubelet's form): `cpu` and `memory` quantities,
 * each at most once, summed over repeats of the flag. Other resources the kubelet knows
 * (`ephemeral-storage`, `pid`) are refused by name, since this agent does not admit by them.
 */
export function reservedFlag(value: string, previous: Reserved | undefined): Reserved {
  let { cpuMillis, memoryBytes } = previous ?? { cpuMillis: 0, memoryBytes: 0 };
  for (const pair of value.split(',').filter((p) => p !== '')) {
    const eq = pair.indexOf('=');
    const [name, amount] = eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
    if (name !== 'cpu' && name !== 'memory')
      throw new InvalidArgumentError(
        `${JSON.stringify(name)}: only cpu and memory are reserved by this agent (e.g. cpu=100m,memory=256Mi)`,
      );
    const q = parseQuantity(amount);
    if (!q.ok || q.value.numerator < 0n) throw new InvalidArgumentError(`${name}=${amount}: ${q.ok ? 'must not be negative' : q.message}`);
    if (name === 'cpu') cpuMillis += Number(ceilMillis(q.value));
    else memoryBytes += Number(ceilUnits(q.value));
  }
  return { cpuMillis, memoryBytes };
}

/** A Node's taint, as `--register-with-taints` gives it. */
export interface TaintFlag {
  readonly key: string;
  readonly value?: string;
  readonly effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

/**
 * `--register-with-taints key=value:Effect,key:Effect` (the kubelet's form, repeatable): each a label
 * key, an optional label value, and one of the three effects.
 */
export function taintsFlag(value: string, previous: readonly TaintFlag[] | undefined): TaintFlag[] {
  const taints = [...(previous ?? [])];
  for (const item of value.split(',').filter((p) => p !== '')) {
    const colon = item.lastIndexOf(':');
    const effect = colon < 0 ? '' : item.slice(colon + 1);
    const [key, taintValue] = (colon < 0 ? item : item.slice(0, colon)).split('=', 2) as [string, string | undefined];
    if (!TAINT_EFFECTS.includes(effect as TaintFlag['effect']))
      throw new InvalidArgumentError(
        `${JSON.stringify(item)}: a taint is key[=value]:Effect, the effect one of ${TAINT_EFFECTS.join(', ')}`,
      );
    if (!isLabelKey(key) || (taintValue !== undefined && !isLabelValue(taintValue)))
      throw new InvalidArgumentError(`${JSON.stringify(item)}: the key must be a label key and the value a label value`);
    taints.push({ key, ...(taintValue === undefined ? {} : { value: taintValue }), effect: effect as TaintFlag['effect'] });
  }
  return taints;
}

/** `--pod-api-server`: `host:port` (an IPv6 address in brackets), the port 1–65535. */
export function hostPortFlag(value: string): { host: string; port: number } {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(value);
  const port = match === null ? Number.NaN : Number(match[2]);
  if (match === null || !(port >= 1 && port <= 65_535))
    throw new InvalidArgumentError(`${JSON.stringify(value)}: must be host:port (an IPv6 address as [addr]:port), the port 1-65535`);
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}
