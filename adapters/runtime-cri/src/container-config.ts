import { CFS_PERIOD_US, Labels, cfsQuotaOf, type ContainerSpec } from '@kubelet-ts/core';
import type { ContainerConfig, CriMount, LinuxContainerSecurityContext, PodSandboxConfig } from './cri-api.js';
import { CriAnnotations } from './mapping.js';
import { SECURITY_CONTEXT } from './sandbox-config.js';

/**
 * CreateContainer's config for `spec` in a sandbox run with `sandboxConfig`: its mounts already
 * resolved to host paths, `logPath` when the sandbox has a log directory, and its own security
 * settings (`criSecurityOf`).
 *
 * The two command fields follow CRI's meaning, which is Kubernetes': CRI `command` replaces the
 * image's ENTRYPOINT (our `entrypoint`, a v1 Pod's `command`) and CRI `args` its CMD (our
 * `command`, the 2014 command, a v1 Pod's `args`), exactly as Docker's `Entrypoint` and `Cmd`.
 */
export function buildContainerConfig(
  spec: ContainerSpec,
  sandboxConfig: PodSandboxConfig,
  mounts: CriMount[],
  logPath: string | undefined,
  security: LinuxContainerSecurityContext = {},
): ContainerConfig {
  const restarts = Number(spec.labels[Labels.restartCount] ?? 0);
  return {
    // (name, attempt) is what CRI keeps unique in a sandbox; the attempt is the kubelet's restart count.
    metadata: { name: spec.name, attempt: Number.isSafeInteger(restarts) && restarts >= 0 ? restarts : 0 },
    image: { image: spec.image },
    ...(spec.entrypoint === undefined ? {} : { command: [...spec.entrypoint] }),
    ...(spec.command === undefined ? {} : { args: [...spec.command] }),
    ...(spec.workingDir === undefined ? {} : { workingDir: spec.workingDir }),
    ...(spec.stdin === true ? { stdin: true, ...(spec.stdinOnce === true ? { stdinOnce: true } : {}) } : {}),
    ...(spec.tty === true ? { tty: true } : {}),
    envs: Object.entries(spec.env).map(([key, value]) => ({ key, value })),
    mounts,
    labels: { ...spec.labels },
    annotations: { [CriAnnotations.image]: spec.image },
    ...(logPath === undefined ? {} : { logPath }),
    linux: {
      resources: {
        ...(spec.memory === undefined ? {} : { memoryLimitInBytes: spec.memory }),
        ...(spec.cpuShares === undefined ? {} : { cpuShares: spec.cpuShares }),
        ...(spec.cpuLimitMillis === undefined ? {} : { cpuPeriod: CFS_PERIOD_US, cpuQuota: cfsQuotaOf(spec.cpuLimitMillis) }),
      },
      // A container shares its sandbox's namespaces (the host's network in a host-network sandbox,
      // as the kubelet asks); a sandbox of someone else's gets the default. Its own settings
      // (`criSecurityOf`) come over the defaults.
      securityContext: {
        ...SECURITY_CONTEXT,
        ...(sandboxConfig.linux?.securityContext?.namespaceOptions === undefined
          ? {}
          : { namespaceOptions: sandboxConfig.linux.securityContext.namespaceOptions }),
        ...security,
      },
    },
  };
}
