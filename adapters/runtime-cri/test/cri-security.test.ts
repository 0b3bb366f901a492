import { describe, expect, it } from '@jest/globals';
import { KubeletError, type ContainerSpec } from '@kubelet-ts/core';
import { buildContainerConfig } from '../src/container-config.js';
import { criSecurityOf, imageUserOf } from '../src/cri-security.js';
import { buildSandboxConfig } from '../src/sandbox-config.js';

const container: ContainerSpec = { name: 'web--main--1', podId: 'web', image: 'busybox', env: {}, ports: [], mounts: [], labels: {} };
const sandboxConfig = buildSandboxConfig(
  { name: 'POD--web--0123abcd', podId: 'web', hostname: 'web', ports: [], labels: {} },
  { hostIp: '' },
);

describe("CRI's security context of a container, as the kubelet writes it", () => {
  it('maps every setting onto LinuxContainerSecurityContext, over the defaults and the sandbox namespaces', () => {
    const spec: ContainerSpec = {
      ...container,
      security: {
        user: 1000,
        group: 3000,
        supplementalGroups: [4000],
        privileged: false,
        noNewPrivileges: true,
        readOnlyRootFilesystem: true,
        capAdd: ['NET_BIND_SERVICE'],
        capDrop: ['ALL'],
        seccomp: { type: 'Unconfined' },
        appArmor: { type: 'Localhost', localhostProfile: 'deny-write' },
        seLinux: { level: 's0:c1,c2' },
      },
    };
    const security = buildContainerConfig(spec, sandboxConfig, [], undefined, criSecurityOf(spec, undefined)).linux?.securityContext;
    expect(security).toEqual({
      namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
      runAsUser: { value: 1000 },
      runAsGroup: { value: 3000 },
      supplementalGroups: [4000],
      noNewPrivs: true,
      readonlyRootfs: true,
      capabilities: { addCapabilities: ['NET_BIND_SERVICE'], dropCapabilities: ['ALL'] },
      seccomp: { profileType: 'Unconfined' },
      apparmor: { profileType: 'Localhost', localhostRef: 'deny-write' },
      apparmorProfile: 'localhost/deny-write',
      selinuxOptions: { level: 's0:c1,c2' },
    });
  });

  it('keeps the RuntimeDefault seccomp profile when nothing is said, as before', () => {
    expect(
      buildContainerConfig(container, sandboxConfig, [], undefined, criSecurityOf(container, undefined)).linux?.securityContext,
    ).toEqual({
      namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
      seccomp: { profileType: 'RuntimeDefault' },
    });
  });

  it("pairs a group given alone with the image's user: its uid, or its name", () => {
    expect(criSecurityOf({ ...container, security: { group: 7 } }, '')).toEqual({ runAsUser: { value: 0 }, runAsGroup: { value: 7 } });
    expect(criSecurityOf({ ...container, security: { group: 7 } }, '101')).toEqual({ runAsUser: { value: 101 }, runAsGroup: { value: 7 } });
    expect(criSecurityOf({ ...container, security: { group: 7 } }, 'nginx')).toEqual({ runAsUsername: 'nginx', runAsGroup: { value: 7 } });
  });

  it('refuses runAsNonRoot for an image that runs as root, naming the container and what to give', () => {
    const refused = () =>
      criSecurityOf(
        { ...container, security: { runAsNonRoot: true } },
        imageUserOf({ id: 'sha256:1', repoTags: [], repoDigests: [], size: 1, uid: null, username: '' }),
      );
    expect(refused).toThrow(KubeletError);
    expect(refused).toThrow(/create web--main--1: runAsNonRoot is set and the image runs as root; give a runAsUser/);
    expect(imageUserOf({ id: 'x', repoTags: [], repoDigests: [], size: 1, uid: { value: '65532' } })).toBe('65532');
    expect(imageUserOf({ id: 'x', repoTags: [], repoDigests: [], size: 1, uid: null, username: 'app' })).toBe('app');
  });
});
