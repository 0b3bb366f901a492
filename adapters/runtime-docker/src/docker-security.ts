import { KubeletError, needsImageUser, runAsNonRootProblem, type ContainerSecurity, type ContainerSpec } from '@kubelet-ts/core';
import type { DockerCreateOptions } from './docker-api.js';
import { ADAPTER } from './errors.js';

/** What a container's security settings add to its create options. */
export type SecurityOptions = Pick<DockerCreateOptions, 'User'> & {
  readonly HostConfig: Pick<
    DockerCreateOptions['HostConfig'],
    'GroupAdd' | 'Privileged' | 'ReadonlyRootfs' | 'CapAdd' | 'CapDrop' | 'SecurityOpt' | 'PidMode' | 'IpcMode' | 'Sysctls'
  >;
};

/**
 * The create options of `security` on Docker's API (Podman's compatible API takes the same), as
 * dockershim mapped a securityContext: `User` `uid[:gid]`, `GroupAdd`, `Privileged`,
 * `ReadonlyRootfs`, `CapAdd`/`CapDrop`, and `SecurityOpt` for no_new_privs, seccomp, AppArmor
 * and SELinux. The image's user (`Config.User`) is asked of `inspectImage` only where
 * `needsImageUser` says so.
 *
 * @throws KubeletError `InvalidManifest` when `runAsNonRoot` cannot hold (see `runAsNonRootProblem`).
 */
export async function securityOptionsOf(
  spec: ContainerSpec,
  inspectImage: () => Promise<unknown>,
  sandboxId: string,
): Promise<SecurityOptions> {
  const { security } = spec;
  // The pod's one process namespace is its holder's (v1 shareProcessNamespace).
  const pid = {
    ...(spec.sharedProcessNamespace === true ? { PidMode: `container:${sandboxId}` } : {}),
    // The host's namespaces (v1 hostPID, hostIPC), joined by each container itself.
    ...(spec.hostPID === true ? { PidMode: 'host' } : {}),
    ...(spec.hostIPC === true ? { IpcMode: 'host' } : {}),
    // The pod's IPC sysctls, in the container's own IPC namespace.
    ...(spec.ipcSysctls === undefined ? {} : { Sysctls: { ...spec.ipcSysctls } }),
  };
  if (security === undefined) return { HostConfig: pid };
  const imageUser = needsImageUser(security) ? ((await inspectImage()) as { Config?: { User?: string } }).Config?.User : undefined;
  const problem = runAsNonRootProblem(security, imageUser);
  if (problem !== undefined) throw new KubeletError('InvalidManifest', `create ${spec.name}: ${problem}`, { adapter: ADAPTER });
  const user = security.user === undefined ? (imageUser ?? '').split(':')[0] || '0' : String(security.user);
  const opts = [
    ...(security.noNewPrivileges === true ? ['no-new-privileges'] : []),
    ...profileOption('seccomp', security.seccomp),
    ...profileOption('apparmor', security.appArmor),
    ...Object.entries(security.seLinux ?? {}).map(([key, value]) => `label=${key}:${value}`),
  ];
  return {
    ...(security.user === undefined && security.group === undefined
      ? {}
      : { User: security.group === undefined ? user : `${user}:${security.group}` }),
    HostConfig: {
      ...pid,
      ...(security.supplementalGroups === undefined ? {} : { GroupAdd: security.supplementalGroups.map(String) }),
      ...(security.privileged === true ? { Privileged: true } : {}),
      ...(security.readOnlyRootFilesystem === true ? { ReadonlyRootfs: true } : {}),
      ...(security.capAdd === undefined ? {} : { CapAdd: [...security.capAdd] }),
      ...(security.capDrop === undefined ? {} : { CapDrop: [...security.capDrop] }),
      ...(opts.length === 0 ? {} : { SecurityOpt: opts }),
    },
  };
}

/**
 * A profile as a security option: nothing for `RuntimeDefault` (the engine applies its own),
 * `unconfined`, or a Localhost profile by name (an AppArmor profile the host has loaded;
 * validation refuses a Localhost seccomp profile).
 */
function profileOption(kind: 'seccomp' | 'apparmor', profile: ContainerSecurity['seccomp']): string[] {
  if (profile === undefined || profile.type === 'RuntimeDefault') return [];
  if (profile.type === 'Unconfined') return [`${kind}=unconfined`];
  return profile.localhostProfile === undefined ? [] : [`${kind}=${profile.localhostProfile}`];
}
