/**
 * What a manifest may take of its host beyond its own namespaces and volumes: each off by default,
 * each a CLI flag, and each refused by field (naming the flag) when not allowed. Every source and
 * the agent take the same two.
 */
export interface HostAccess {
  /**
   * Accept `volumeMounts[].mountType: HOST` and `hostPath` volumes, which bind the host's
   * directory at the mount path into the container (the 2014 meaning), a path that is normal,
   * absolute and not `/`. Default false: such a manifest is refused with a message naming
   * `--allow-host-mounts`, since it gives the pod any file of the host.
   */
  readonly allowHostMounts?: boolean | undefined;
  /**
   * Accept `hostNetwork: true`. Default false: refused naming `--allow-host-network`, since a pod
   * in the host's network reaches the agent's server on 127.0.0.1 and can bind its port while the
   * agent restarts (an agent that allows it serves no caller unauthenticated, loopback included).
   */
  readonly allowHostNetwork?: boolean | undefined;
  /**
   * Accept `securityContext.privileged: true`. Default false: refused naming `--allow-privileged`
   * (the 2014 flag), since such a container has every device and capability of the host.
   */
  readonly allowPrivileged?: boolean | undefined;
  /**
   * The host enforces AppArmor (`/sys/module/apparmor/parameters/enabled` is `Y`; see
   * `hostEnforcesAppArmor` in `@kubelet-ts/runner`), so a pod's AppArmor profile can be applied.
   * Default false: a profile other than `Unconfined` is refused by field, as the kubelet refuses
   * such a pod on a host without AppArmor; it is never ignored.
   */
  readonly appArmor?: boolean | undefined;
  /**
   * This node's labels (the kubelet's `--node-labels`, with `kubernetes.io/hostname`, `os` and
   * `arch`), which a pod's `nodeSelector` and required node affinity must match, as the kubelet's
   * admission checks them. Absent: the labels of the OS and architecture alone (`nodeLabelsOf`).
   */
  readonly nodeLabels?: Readonly<Record<string, string>> | undefined;
  /**
   * Sysctls a pod may set beyond the kubelet's safe set (`SAFE_SYSCTLS`), as the kubelet's
   * `--allowed-unsafe-sysctls`: names, or prefixes ending in `*` (`kernel.msg*`), each of a
   * namespaced sysctl. Default none: such a pod is refused by field, naming the flag.
   */
  readonly allowedUnsafeSysctls?: readonly string[] | undefined;
}

/** The host access of `options` alone (to pass it on), each power true or false, the node's labels when given. */
export function hostAccessOf(options: HostAccess): Required<{
  [K in Exclude<keyof HostAccess, 'nodeLabels' | 'allowedUnsafeSysctls'>]: boolean;
}> & {
  readonly nodeLabels?: Readonly<Record<string, string>>;
  readonly allowedUnsafeSysctls?: readonly string[];
} {
  return {
    allowHostMounts: options.allowHostMounts === true,
    allowHostNetwork: options.allowHostNetwork === true,
    allowPrivileged: options.allowPrivileged === true,
    appArmor: options.appArmor === true,
    ...(options.nodeLabels === undefined ? {} : { nodeLabels: options.nodeLabels }),
    ...(options.allowedUnsafeSysctls === undefined || options.allowedUnsafeSysctls.length === 0
      ? {}
      : { allowedUnsafeSysctls: options.allowedUnsafeSysctls }),
  };
}
