import {
  KubeletError,
  localhostSeccompProblem,
  runAsNonRootProblem,
  type ContainerSecurity,
  type ContainerSpec,
  type SecurityProfile,
} from '@kubelet-ts/core';
import type { CriImage, LinuxContainerSecurityContext, SecurityProfile as CriProfile } from './cri-api.js';
import { ADAPTER } from './errors.js';

/** The user an image runs as, in the image config's form (`1000`, `nginx`; empty for root). */
export function imageUserOf(image: CriImage | null): string {
  if (image === null) return '';
  if (image.uid !== null && image.uid !== undefined) return String(image.uid.value);
  return image.username ?? '';
}

/**
 * What `spec.security` adds to CreateContainer's security context, as the kubelet's
 * `convertToRuntimeSecurityContext` writes it: a `runAsGroup` given alone is paired with the
 * image's user (`imageUser`, its uid or its name), as runtimes want a user with a group.
 *
 * @throws KubeletError `InvalidManifest` when `runAsNonRoot` cannot hold (see `runAsNonRootProblem`).
 */
export function criSecurityOf(spec: ContainerSpec, imageUser: string | undefined): LinuxContainerSecurityContext {
  const security = spec.security;
  if (security === undefined) return {};
  // The runtime reads a Localhost profile's file itself, from its path (`localhostRef`).
  const problem = runAsNonRootProblem(security, imageUser) ?? localhostSeccompProblem(security);
  if (problem !== undefined) throw new KubeletError('InvalidManifest', `create ${spec.name}: ${problem}`, { adapter: ADAPTER });
  return {
    ...userOf(security, imageUser),
    ...(security.group === undefined ? {} : { runAsGroup: { value: security.group } }),
    ...(security.supplementalGroups === undefined ? {} : { supplementalGroups: [...security.supplementalGroups] }),
    ...(security.privileged === true ? { privileged: true } : {}),
    ...(security.noNewPrivileges === true ? { noNewPrivs: true } : {}),
    ...(security.readOnlyRootFilesystem === true ? { readonlyRootfs: true } : {}),
    ...(security.capAdd === undefined && security.capDrop === undefined
      ? {}
      : { capabilities: { addCapabilities: [...(security.capAdd ?? [])], dropCapabilities: [...(security.capDrop ?? [])] } }),
    ...(security.seccomp === undefined ? {} : { seccomp: profileOf(security.seccomp) }),
    ...(security.appArmor === undefined
      ? {}
      : { apparmor: profileOf(security.appArmor), apparmorProfile: appArmorText(security.appArmor) }),
    ...(security.seLinux === undefined ? {} : { selinuxOptions: { ...security.seLinux } }),
  };
}

function userOf(security: ContainerSecurity, imageUser: string | undefined): LinuxContainerSecurityContext {
  if (security.user !== undefined) return { runAsUser: { value: security.user } };
  if (security.group === undefined) return {};
  const user = (imageUser ?? '').split(':')[0] ?? '';
  if (user === '' || /^\d+$/.test(user)) return { runAsUser: { value: user === '' ? 0 : Number(user) } };
  return { runAsUsername: user };
}

function profileOf(profile: SecurityProfile): CriProfile {
  return { profileType: profile.type, ...(profile.localhostProfile === undefined ? {} : { localhostRef: profile.localhostProfile }) };
}

/** The AppArmor profile as containerd 1.6 reads it (the text form CRI had before its `apparmor` field). */
function appArmorText(profile: SecurityProfile): string {
  if (profile.type === 'Unconfined') return 'unconfined';
  if (profile.type === 'Localhost') return `localhost/${profile.localhostProfile ?? ''}`;
  return 'runtime/default';
}
