import { describe, expect, it } from '@jest/globals';
import {
  buildSandboxSpec,
  containerSecurityOf,
  needsImageUser,
  runAsNonRootProblem,
  validateManifest,
  type ContainerManifest,
} from '../src/index.js';
import { Labels } from '../src/naming.js';

describe('runAsNonRootProblem: the kubelet’s verifyRunAsNonRoot', () => {
  it('says nothing without runAsNonRoot, whatever the user', () => {
    expect(runAsNonRootProblem(undefined, '')).toBeUndefined();
    expect(runAsNonRootProblem({ user: 0 }, '')).toBeUndefined();
    expect(runAsNonRootProblem({ runAsNonRoot: false }, 'root')).toBeUndefined();
  });

  it('lets a runAsUser decide alone', () => {
    expect(runAsNonRootProblem({ runAsNonRoot: true, user: 1000 }, '')).toBeUndefined();
    expect(runAsNonRootProblem({ runAsNonRoot: true, user: 0 }, '1000')).toContain('runAsUser is 0');
  });

  it.each([
    ['', 'the image runs as root'],
    ['0', 'the image runs as root'],
    ['root', 'the image runs as root'],
    ['0:0', 'the image runs as root'],
    ['nginx', 'is a name, which cannot be checked'],
  ])('refuses an image whose user is %j without a runAsUser', (imageUser, message) => {
    expect(runAsNonRootProblem({ runAsNonRoot: true }, imageUser)).toContain(message);
  });

  it('accepts an image whose user is a number other than 0', () => {
    expect(runAsNonRootProblem({ runAsNonRoot: true }, '101')).toBeUndefined();
    expect(runAsNonRootProblem({ runAsNonRoot: true }, '65532:65532')).toBeUndefined();
  });
});

describe('needsImageUser', () => {
  it('asks for the image’s user only where a runtime needs it: runAsNonRoot or a group without a user', () => {
    expect(needsImageUser(undefined)).toBe(false);
    expect(needsImageUser({ user: 1 })).toBe(false);
    expect(needsImageUser({ user: 1, runAsNonRoot: true, group: 2 })).toBe(false);
    expect(needsImageUser({ runAsNonRoot: true })).toBe(true);
    expect(needsImageUser({ group: 2 })).toBe(true);
    expect(needsImageUser({ readOnlyRootFilesystem: true })).toBe(false);
  });
});

describe('containerSecurityOf', () => {
  it('takes the container’s shared settings over the pod’s, and puts fsGroup among the groups once', () => {
    expect(
      containerSecurityOf(
        { securityContext: { runAsUser: 1, runAsGroup: 2, supplementalGroups: [5, 6], fsGroup: 6, seLinuxOptions: { level: 's0:c1' } } },
        { securityContext: { runAsUser: 3, seccompProfile: { type: 'Unconfined' }, seLinuxOptions: { level: 's0:c2' } } },
      ),
    ).toEqual({ user: 3, group: 2, supplementalGroups: [5, 6], seccomp: { type: 'Unconfined' }, seLinux: { level: 's0:c2' } });
  });

  it('sets no_new_privs only for allowPrivilegeEscalation: false, and is undefined when nothing is said', () => {
    expect(containerSecurityOf({}, { securityContext: { allowPrivilegeEscalation: true } })).toBeUndefined();
    expect(containerSecurityOf({}, { securityContext: { allowPrivilegeEscalation: false } })).toEqual({ noNewPrivileges: true });
    expect(containerSecurityOf({}, {})).toBeUndefined();
  });
});

describe('a privileged container makes its pod’s sandbox privileged', () => {
  const manifest = (security?: object): ContainerManifest => {
    const result = validateManifest(
      { id: 'web', containers: [{ name: 'app', image: 'busybox', ...(security === undefined ? {} : { securityContext: security }) }] },
      { allowPrivileged: true },
    );
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    return result.manifest;
  };
  const context = { node: 'n', source: 's' };

  it('asks for a privileged sandbox, with a sandbox hash of its own; any other pod keeps its hash', () => {
    const plain = buildSandboxSpec(manifest(), context);
    const readOnly = buildSandboxSpec(manifest({ readOnlyRootFilesystem: true }), context);
    const privileged = buildSandboxSpec(manifest({ privileged: true }), context);
    expect(plain.privileged).toBeUndefined();
    expect(privileged.privileged).toBe(true);
    expect(readOnly.labels[Labels.sandboxHash]).toBe(plain.labels[Labels.sandboxHash]);
    expect(privileged.labels[Labels.sandboxHash]).not.toBe(plain.labels[Labels.sandboxHash]);
  });
});
