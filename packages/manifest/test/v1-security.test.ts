import { describe, expect, it } from '@jest/globals';
import { Labels, buildContainerSpec, buildSandboxSpec, containerSecurityOf, specHash, type ContainerManifest } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { toV1Pod } from '../src/v1/to-v1.js';
import { toV1beta1 } from '../src/v1/to-v1beta1.js';
import { accepted, app, pod, refused, type Obj } from './v1-pod-fixture.js';

const ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/app';

/** Parses with the host's powers given: `--allow-privileged`, a host that enforces AppArmor. */
function parsed(input: Obj, host: { allowPrivileged?: boolean; appArmor?: boolean }) {
  return parseManifests(JSON.stringify(input), 'test.json', { allowHostNetwork: true, ...host });
}

describe('v1 securityContext: what a pod and a container may say', () => {
  it('keeps both levels as written; a container gets its own settings over its pod’s, and fsGroup among its groups', () => {
    const m = accepted(
      pod(
        { securityContext: { runAsUser: 2000, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true } },
        {
          securityContext: {
            runAsUser: 1000,
            runAsGroup: 3000,
            runAsNonRoot: true,
            supplementalGroups: [4000],
            fsGroup: 2000,
            seccompProfile: { type: 'RuntimeDefault' },
          },
        },
      ),
    );
    expect(m.securityContext).toEqual({
      runAsUser: 1000,
      runAsGroup: 3000,
      runAsNonRoot: true,
      supplementalGroups: [4000],
      fsGroup: 2000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(app(m)?.securityContext).toEqual({ runAsUser: 2000, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(containerSecurityOf(m, app(m) ?? {})).toEqual({
      user: 2000,
      group: 3000,
      supplementalGroups: [4000, 2000],
      runAsNonRoot: true,
      noNewPrivileges: true,
      readOnlyRootFilesystem: true,
      seccomp: { type: 'RuntimeDefault' },
    });
  });

  it('gives the runtime the merged settings, and nothing when nobody says anything', () => {
    const m = accepted(pod({ securityContext: { capabilities: { drop: ['all'], add: ['cap_net_bind_service'] } } }));
    const spec = buildContainerSpec(m, app(m) as NonNullable<ReturnType<typeof app>>, { node: 'n', source: 's' });
    expect(spec.security).toEqual({ capAdd: ['NET_BIND_SERVICE'], capDrop: ['ALL'] });
    const plain = accepted(pod({ securityContext: {} }, { securityContext: {} }));
    expect(plain.securityContext).toBeUndefined();
    expect(app(plain)?.securityContext).toBeUndefined();
    expect(
      buildContainerSpec(plain, app(plain) as NonNullable<ReturnType<typeof app>>, { node: 'n', source: 's' }).security,
    ).toBeUndefined();
  });

  it('a changed pod securityContext changes the container’s spec hash; an empty one changes nothing', () => {
    const hash = (m: ContainerManifest) => specHash(m, m.containers[0] as ContainerManifest['containers'][number]);
    const plain = hash(accepted(pod()));
    expect(hash(accepted(pod({}, { securityContext: {} })))).toBe(plain);
    const user = hash(accepted(pod({}, { securityContext: { runAsUser: 1000 } })));
    expect(user).not.toBe(plain);
    expect(hash(accepted(pod({}, { securityContext: { runAsUser: 1001 } })))).not.toBe(user);
    expect(hash(accepted(pod({ securityContext: { readOnlyRootFilesystem: true } })))).not.toBe(plain);
  });

  it('a RuntimeDefault seccomp profile (what kubeadm writes, what the engines apply anyway) changes no spec hash, unless it overrides the pod’s', () => {
    const hash = (m: ContainerManifest) => specHash(m, m.containers[0] as ContainerManifest['containers'][number]);
    const runtimeDefault = { seccompProfile: { type: 'RuntimeDefault' } };
    const plain = hash(accepted(pod()));
    expect(hash(accepted(pod({ securityContext: runtimeDefault }, { securityContext: runtimeDefault })))).toBe(plain);
    const unconfined = { securityContext: { seccompProfile: { type: 'Unconfined' } } };
    expect(hash(accepted(pod({ securityContext: runtimeDefault }, unconfined)))).not.toBe(hash(accepted(pod({}, unconfined))));
    expect(toV1beta1(accepted(pod({ securityContext: runtimeDefault }, { securityContext: runtimeDefault })))).toMatchObject({ id: 'web' });
  });

  it('ignores what means nothing on Linux or happens anyway (windowsOptions, procMount Default, Merge, change policies)', () => {
    const m = accepted(
      pod(
        { securityContext: { windowsOptions: { runAsUserName: 'x' }, procMount: 'Default', runAsUser: 5 } },
        {
          securityContext: {
            windowsOptions: { gmsaCredentialSpecName: 'y' },
            supplementalGroupsPolicy: 'Merge',
            fsGroupChangePolicy: 'OnRootMismatch',
            fsGroup: 7,
          },
        },
      ),
    );
    expect(m.securityContext).toEqual({ fsGroup: 7 });
    expect(app(m)?.securityContext).toEqual({ runAsUser: 5 });
  });

  it('writes both levels back out in v1 and reads them again to the same manifest; v1beta1 has no form for them', () => {
    const m = accepted(
      pod({ securityContext: { capabilities: { drop: ['NET_RAW'] }, privileged: false } }, { securityContext: { runAsUser: 10 } }),
    );
    const v1 = toV1Pod(m);
    expect(v1.spec['securityContext']).toEqual({ runAsUser: 10 });
    expect(accepted(v1)).toEqual(m);
    expect(() => toV1beta1(m)).toThrow(/spec\.securityContext: has no v1beta1 form/);
    expect(() => toV1beta1(m)).toThrow(/spec\.containers\[0\]\.securityContext: has no v1beta1 form/);
  });
});

describe('v1 hostname and shareProcessNamespace', () => {
  it('give the sandbox the pod’s hostname and one process namespace, a sandbox of their own, and write back', () => {
    const m = accepted(pod({}, { hostname: 'named', shareProcessNamespace: true }));
    expect(m).toMatchObject({ hostname: 'named', shareProcessNamespace: true });
    const sandbox = buildSandboxSpec(m, { node: 'n', source: 's' });
    expect(sandbox).toMatchObject({ hostname: 'named', shareProcessNamespace: true });
    expect(sandbox.labels[Labels.sandboxHash]).not.toBe(
      buildSandboxSpec(accepted(pod()), { node: 'n', source: 's' }).labels[Labels.sandboxHash],
    );
    expect(buildContainerSpec(m, app(m)!, { node: 'n', source: 's' }).sharedProcessNamespace).toBe(true);
    expect(accepted(toV1Pod(m))).toEqual(m);
    expect(() => toV1beta1(m)).toThrow(/spec\.hostname: has no v1beta1 form/);
  });
});

describe('v1 securityContext: refusals name the field and what to do', () => {
  it.each([
    [pod({}, { securityContext: { runAsUser: -1 } }), 'spec.securityContext.runAsUser', 'must be 0-2147483647'],
    [pod({ securityContext: { runAsGroup: 2 ** 31 } }), 'spec.containers[0].securityContext.runAsGroup', 'must be 0-2147483647'],
    [pod({}, { securityContext: { supplementalGroups: ['x'] } }), 'spec.securityContext.supplementalGroups[0]', 'must be an integer'],
    [pod({ securityContext: { runAsNonRoot: true, runAsUser: 0 } }), 'spec.containers[0].securityContext.runAsNonRoot', 'runAsUser is 0'],
    [pod({ securityContext: { privileged: 'yes' } }), 'spec.containers[0].securityContext.privileged', 'must be true or false'],
    [
      pod({ securityContext: { capabilities: { add: ['NET_FLY'] } } }),
      'spec.containers[0].securityContext.capabilities.add[0]',
      'is not a Linux capability',
    ],
    [pod({ securityContext: { capabilities: { keep: [] } } }), 'spec.containers[0].securityContext.capabilities.keep', 'not supported'],
    [
      pod({ securityContext: { allowPrivilegeEscalation: false, capabilities: { add: ['SYS_ADMIN'] } } }),
      'spec.containers[0].securityContext.allowPrivilegeEscalation',
      'SYS_ADMIN',
    ],
    [pod({ securityContext: { seccompProfile: {} } }), 'spec.containers[0].securityContext.seccompProfile.type', 'is required'],
    [
      pod({ securityContext: { seccompProfile: { type: 'Unconfined', localhostProfile: 'x' } } }),
      'spec.containers[0].securityContext.seccompProfile.localhostProfile',
      'must be left out',
    ],
    [
      pod({}, { securityContext: { seLinuxOptions: { type: 'spc_t; rm' } } }),
      'spec.securityContext.seLinuxOptions.type',
      'is not an SELinux name',
    ],
    [
      pod({}, { securityContext: { supplementalGroupsPolicy: 'Strict' } }),
      'spec.securityContext.supplementalGroupsPolicy',
      'leave it out (Merge)',
    ],
  ])('%# refuses %j', (input, path, message) => {
    expect(refused(input)).toContainEqual({ path, message: expect.stringContaining(message) });
  });

  it('privileged only with --allow-privileged, and never with allowPrivilegeEscalation: false', () => {
    const privileged = pod({ securityContext: { privileged: true } });
    expect(parsed(privileged, {}).rejected[0]?.errors).toEqual([
      { path: 'spec.containers[0].securityContext.privileged', message: expect.stringContaining('--allow-privileged (allowPrivileged)') },
    ]);
    expect(parsed(privileged, { allowPrivileged: true }).manifests[0]?.containers[0]?.securityContext).toEqual({ privileged: true });
    const both = pod({ securityContext: { privileged: true, allowPrivilegeEscalation: false } });
    expect(parsed(both, { allowPrivileged: true }).rejected[0]?.errors).toEqual([
      { path: 'spec.containers[0].securityContext.allowPrivilegeEscalation', message: expect.stringContaining('privileged container') },
    ]);
  });
});

describe('v1 AppArmor: applied where the host enforces it, refused by field or annotation where not; never ignored', () => {
  it('refuses a profile on a host without AppArmor, naming the field', () => {
    const input = pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } });
    expect(parsed(input, { appArmor: false }).rejected[0]?.errors).toEqual([
      {
        path: 'spec.containers[0].securityContext.appArmorProfile',
        message: expect.stringContaining('this host does not enforce AppArmor'),
      },
    ]);
  });

  it('refuses the annotation on such a host, naming the annotation', () => {
    const input = pod({}, {}, { annotations: { [ANNOTATION]: 'localhost/k8s-apparmor-example-deny-write' } });
    expect(parsed(input, { appArmor: false }).rejected[0]?.errors).toEqual([
      { path: `metadata.annotations[${ANNOTATION}]`, message: expect.stringContaining('Localhost cannot be applied') },
    ]);
  });

  it('takes the annotation as the container’s profile where the field does not say; the field wins', () => {
    const fromAnnotation = parsed(pod({}, {}, { annotations: { [ANNOTATION]: 'localhost/deny-write' } }), { appArmor: true });
    expect(fromAnnotation.manifests[0]?.containers[0]?.securityContext).toEqual({
      appArmorProfile: { type: 'Localhost', localhostProfile: 'deny-write' },
    });
    const both = parsed(
      pod({ securityContext: { appArmorProfile: { type: 'Unconfined' } } }, {}, { annotations: { [ANNOTATION]: 'runtime/default' } }),
      {
        appArmor: false,
      },
    );
    expect(both.manifests[0]?.containers[0]?.securityContext).toEqual({ appArmorProfile: { type: 'Unconfined' } });
  });

  it('accepts Unconfined on any host; refuses an annotation of no container or of no known form', () => {
    expect(parsed(pod({}, {}, { annotations: { [ANNOTATION]: 'unconfined' } }), {}).manifests).toHaveLength(1);
    const errors = refused(
      pod({}, {}, { annotations: { 'container.apparmor.security.beta.kubernetes.io/nope': 'unconfined', [ANNOTATION]: 'strict' } }),
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        {
          path: 'metadata.annotations[container.apparmor.security.beta.kubernetes.io/nope]',
          message: expect.stringContaining('names no container'),
        },
        {
          path: `metadata.annotations[${ANNOTATION}]`,
          message: expect.stringContaining('must be runtime/default, localhost/<profile> or unconfined'),
        },
      ]),
    );
  });
});
