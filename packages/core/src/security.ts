import type { Container, ContainerManifest } from './manifest.js';

/**
 * A seccomp or AppArmor profile as a v1 Pod writes it. `RuntimeDefault` is the engine's own
 * profile, `Unconfined` none, `Localhost` a profile of the host named by `localhostProfile`
 * (seccomp: a JSON file under the agent's seccomp directory; AppArmor: a loaded profile's name).
 */
export interface SecurityProfile {
  readonly type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  readonly localhostProfile?: string;
}

/** SELinux labels for a container's processes and files; applied by an engine on an SELinux host, as the kubelet passes them. */
export interface SELinuxOptions {
  readonly user?: string;
  readonly role?: string;
  readonly type?: string;
  readonly level?: string;
}

/** The settings a v1 Pod may write at both levels; a container's own wins over its pod's. */
export interface SharedSecurity {
  /** The uid the container's first process runs as. Absent: the image's user. */
  readonly runAsUser?: number;
  /** Its primary gid. Absent: the image user's group (0 for a bare uid). */
  readonly runAsGroup?: number;
  /** Refuse to create the container when it would run as uid 0 (the image's user is checked when `runAsUser` is absent). */
  readonly runAsNonRoot?: boolean;
  readonly seccompProfile?: SecurityProfile;
  readonly appArmorProfile?: SecurityProfile;
  readonly seLinuxOptions?: SELinuxOptions;
}

/** A kernel parameter set in the pod's namespaces (v1 `spec.securityContext.sysctls`). */
export interface Sysctl {
  readonly name: string;
  readonly value: string;
}

/** v1 `spec.securityContext`: the shared settings, and what only a pod can say. */
export interface PodSecurityContext extends SharedSecurity {
  /** Extra gids of every container's first process. */
  readonly supplementalGroups?: readonly number[];
  /**
   * A gid every container gets as a supplemental group. (The kubelet also gives it the pod's own
   * volumes, group-writable with setgid; this agent does not change their ownership yet.)
   */
  readonly fsGroup?: number;
  readonly sysctls?: readonly Sysctl[];
}

/** v1 `containers[].securityContext`: the shared settings, and what only a container can say. */
export interface ContainerSecurityContext extends SharedSecurity {
  /** Every capability and device of the host; accepted only with `allowPrivileged` (`--allow-privileged`). */
  readonly privileged?: boolean;
  /** `false` sets the kernel's no_new_privs: setuid binaries and file capabilities give nothing. Absent: the engine's default (allowed). */
  readonly allowPrivilegeEscalation?: boolean;
  readonly readOnlyRootFilesystem?: boolean;
  /** Capability names without `CAP_` (validation strips it), upper case; `ALL` in `drop` drops every one. */
  readonly capabilities?: { readonly add?: readonly string[]; readonly drop?: readonly string[] };
}

/**
 * What a runtime applies to one container: its pod's and its own settings merged (the kubelet's
 * `determineEffectiveSecurityContext`), with the pod's `fsGroup` among the supplemental groups.
 * Each absent field is the engine's default.
 */
export interface ContainerSecurity {
  readonly user?: number;
  readonly group?: number;
  readonly supplementalGroups?: readonly number[];
  /** Refuse (`InvalidManifest`) to create the container when it would run as root; see `runAsNonRootProblem`. */
  readonly runAsNonRoot?: boolean;
  readonly privileged?: boolean;
  readonly noNewPrivileges?: boolean;
  readonly readOnlyRootFilesystem?: boolean;
  readonly capAdd?: readonly string[];
  readonly capDrop?: readonly string[];
  /** Absent: the engine's default profile (`RuntimeDefault`). */
  readonly seccomp?: SecurityProfile;
  /** Absent: the engine's default. Validation accepts one only on a host that enforces AppArmor. */
  readonly appArmor?: SecurityProfile;
  readonly seLinux?: SELinuxOptions;
}

/** The container's effective settings (see `ContainerSecurity`); `undefined` when neither the pod nor the container says anything. */
export function containerSecurityOf(
  manifest: Pick<ContainerManifest, 'securityContext'>,
  container: Pick<Container, 'securityContext'>,
): ContainerSecurity | undefined {
  const pod = manifest.securityContext ?? {};
  const own = container.securityContext ?? {};
  const groups = [...(pod.supplementalGroups ?? []), ...(pod.fsGroup === undefined ? [] : [pod.fsGroup])];
  const supplementalGroups = [...new Set(groups)];
  const merged: ContainerSecurity = {
    ...defined('user', own.runAsUser ?? pod.runAsUser),
    ...defined('group', own.runAsGroup ?? pod.runAsGroup),
    ...(supplementalGroups.length === 0 ? {} : { supplementalGroups }),
    ...defined('runAsNonRoot', own.runAsNonRoot ?? pod.runAsNonRoot),
    ...defined('privileged', own.privileged),
    ...(own.allowPrivilegeEscalation === false ? { noNewPrivileges: true } : {}),
    ...defined('readOnlyRootFilesystem', own.readOnlyRootFilesystem),
    ...(own.capabilities?.add?.length ? { capAdd: own.capabilities.add } : {}),
    ...(own.capabilities?.drop?.length ? { capDrop: own.capabilities.drop } : {}),
    ...defined('seccomp', own.seccompProfile ?? pod.seccompProfile),
    ...defined('appArmor', own.appArmorProfile ?? pod.appArmorProfile),
    ...defined('seLinux', own.seLinuxOptions ?? pod.seLinuxOptions),
  };
  return Object.keys(merged).length === 0 ? undefined : merged;
}

function defined<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * Whether creating the container needs its image's user: to check `runAsNonRoot` without a
 * `runAsUser`, or to pair a `runAsGroup` given alone with the image's user (the kubelet keeps the
 * image's user there, and runtimes want a user with a group).
 */
export function needsImageUser(security: ContainerSecurity | undefined): boolean {
  return security !== undefined && security.user === undefined && (security.runAsNonRoot === true || security.group !== undefined);
}

/**
 * Why a container with `runAsNonRoot` must not be created (the kubelet's `verifyRunAsNonRoot`),
 * given the user its image runs as (`Config.User`: `name`, `uid`, `uid:gid`; empty for root);
 * `undefined` when it may be. A `runAsUser` decides alone; without one, the image's user must
 * be a number other than 0, since a name cannot be checked before the container runs.
 */
export function runAsNonRootProblem(security: ContainerSecurity | undefined, imageUser: string | undefined): string | undefined {
  if (security?.runAsNonRoot !== true) return undefined;
  if (security.user !== undefined)
    return security.user === 0 ? 'runAsNonRoot is set and runAsUser is 0 (root); give a runAsUser other than 0' : undefined;
  const user = (imageUser ?? '').split(':')[0] ?? '';
  if (user === '' || user === '0' || user === 'root')
    return 'runAsNonRoot is set and the image runs as root; give a runAsUser other than 0, or use an image whose USER is not root';
  if (!/^\d+$/.test(user))
    return `runAsNonRoot is set and the image's user ${JSON.stringify(user)} is a name, which cannot be checked to be non-root; give a numeric runAsUser`;
  return undefined;
}

/**
 * Why a Localhost seccomp profile cannot be given to an engine: its name was not made a path under
 * the agent's seccomp directory (`SpecContext.seccompProfileRoot`); `undefined` when it can, or
 * when the profile is not Localhost.
 */
export function localhostSeccompProblem(security: ContainerSecurity | undefined): string | undefined {
  const profile = security?.seccomp;
  if (profile?.type !== 'Localhost' || profile.localhostProfile?.startsWith('/') === true) return undefined;
  return `the Localhost seccomp profile ${JSON.stringify(profile.localhostProfile ?? '')} is a name under the agent's seccomp directory, and none is set; give one (--seccomp-profile-root, KubeletOptions.seccompProfileRoot)`;
}

/**
 * A securityContext without what the engines do anyway: a `RuntimeDefault` seccomp profile (the
 * profile every runtime applies when none is given) where it overrides nothing (`inherited`, the
 * pod's profile, is absent or the same); `undefined` when nothing else is said. What the spec hash
 * and a conversion to v1beta1 look at: kubeadm's static pods say it, and read before this agent
 * kept securityContext they had the hashes they have now.
 */
export function withoutEngineDefaults<T extends SharedSecurity>(context: T | undefined, inherited?: SecurityProfile): T | undefined {
  if (context === undefined) return undefined;
  const redundant = context.seccompProfile?.type === 'RuntimeDefault' && (inherited === undefined || inherited.type === 'RuntimeDefault');
  const { seccompProfile: _default, ...rest } = context;
  const kept = redundant ? rest : context;
  return Object.keys(kept).length === 0 ? undefined : (kept as T);
}
