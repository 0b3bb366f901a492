import { readFile } from 'node:fs/promises';
import {
  KubeletError,
  localhostSeccompProblem,
  needsImageUser,
  runAsNonRootProblem,
  type ContainerSecurity,
  type ContainerSpec,
} from '@kubelet-ts/core';
import type { DockerCreateOptions } from './docker-api.js';
import type { EngineKind } from './engine-kind.js';
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
  engine: EngineKind = 'docker',
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
  const problem = runAsNonRootProblem(security, imageUser) ?? localhostSeccompProblem(security);
  if (problem !== undefined) throw new KubeletError('InvalidManifest', `create ${spec.name}: ${problem}`, { adapter: ADAPTER });
  const user = security.user === undefined ? (imageUser ?? '').split(':')[0] || '0' : String(security.user);
  const opts = [
    ...(security.noNewPrivileges === true ? ['no-new-privileges'] : []),
    ...(security.seccomp?.type === 'Localhost'
      ? [`seccomp=${await localhostSeccomp(spec, security.seccomp.localhostProfile ?? '', engine)}`]
      : profileOption('seccomp', security.seccomp)),
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
 * A Localhost seccomp profile as the engine's API takes one: Docker's, its JSON itself (the Docker
 * CLI reads the file for `--security-opt seccomp=FILE`, as dockershim did for the kubelet), read
 * from the agent's seccomp directory on this host; Podman's, the file's path, which it opens itself.
 *
 * @throws KubeletError `InvalidManifest` when the file cannot be read.
 */
async function localhostSeccomp(spec: ContainerSpec, path: string, engine: EngineKind): Promise<string> {
  try {
    const json = await readFile(path, 'utf8');
    return engine === 'podman' ? path : json;
  } catch (error) {
    throw new KubeletError(
      'InvalidManifest',
      `create ${spec.name}: the Localhost seccomp profile ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); put it there, or give another localhostProfile`,
      { adapter: ADAPTER, cause: error },
    );
  }
}

/**
 * A profile as a security option: nothing for `RuntimeDefault` (the engine applies its own),
 * `unconfined`, or a Localhost profile by name (an AppArmor profile the host has loaded; a
 * Localhost seccomp profile is given as its JSON, see `localhostSeccomp`).
 */
function profileOption(kind: 'seccomp' | 'apparmor', profile: ContainerSecurity['seccomp']): string[] {
  if (profile === undefined || profile.type === 'RuntimeDefault') return [];
  if (profile.type === 'Unconfined') return [`${kind}=unconfined`];
  return profile.localhostProfile === undefined ? [] : [`${kind}=${profile.localhostProfile}`];
}
