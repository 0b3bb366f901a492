/**
 * The sysctls the kubelet lets any pod set (`pkg/kubelet/sysctl/safe_sysctls.go`): each is
 * namespaced and cannot take more of the node than the pod's own share.
 */
export const SAFE_SYSCTLS: readonly string[] = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
];

/** The IPC namespace's sysctls, by prefix, as the kubelet tells them (`pkg/kubelet/sysctl/namespace.go`). */
const IPC_PREFIXES = ['kernel.shm', 'kernel.msg', 'kernel.sem', 'fs.mqueue.'];

/** A sysctl's name as Kubernetes takes it: segments of `[a-z0-9_-]` joined by `.` or `/`. */
export const SYSCTL_NAME = /^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$/;

/** `net/ipv4/tcp_syncookies` as `net.ipv4.tcp_syncookies` (Kubernetes takes either separator). */
export function normalSysctlName(name: string): string {
  return name.replaceAll('/', '.');
}

/** The kernel namespace a sysctl (or a prefix of sysctls) belongs to, or undefined for one of the node's. */
export function sysctlNamespace(name: string): 'net' | 'ipc' | undefined {
  if (name.startsWith('net.')) return 'net';
  if (IPC_PREFIXES.some((prefix) => name.startsWith(prefix))) return 'ipc';
  return undefined;
}

/** Whether `name` is safe, or matches one of `allowed` (a name, or a prefix ending in `*`). */
export function sysctlAllowed(name: string, allowed: readonly string[] = []): boolean {
  if (SAFE_SYSCTLS.includes(name)) return true;
  return allowed.some((pattern) => {
    const normal = normalSysctlName(pattern);
    return normal.endsWith('*') ? name.startsWith(normal.slice(0, -1)) : name === normal;
  });
}
