import { describe, expect, it } from '@jest/globals';
import { localhostSeccompProblem } from '../src/security.js';
import { buildContainerSpec } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';

const pod = (seccompProfile: unknown, own?: unknown) =>
  validateManifest({
    version: 'v1beta1',
    id: 'audit-pod',
    securityContext: { seccompProfile },
    containers: [{ name: 'main', image: 'app:1', ...(own === undefined ? {} : { securityContext: { seccompProfile: own } }) }],
  });

describe('a Localhost seccomp profile', () => {
  it('is accepted as a relative name, and refused absolute, with "..", or without a name', () => {
    expect(pod({ type: 'Localhost', localhostProfile: 'profiles/audit.json' }).ok).toBe(true);
    for (const [profile, message] of [
      [{ type: 'Localhost', localhostProfile: '/etc/audit.json' }, 'must be a relative name without ".."'],
      [{ type: 'Localhost', localhostProfile: 'profiles/../../audit.json' }, 'must be a relative name without ".."'],
      [{ type: 'Localhost' }, 'is required with type Localhost'],
    ] as const) {
      const r = pod(profile);
      expect(r.ok ? [] : r.errors).toEqual([
        { path: 'securityContext.seccompProfile.localhostProfile', message: expect.stringContaining(message) },
      ]);
    }
  });

  it('becomes the path of its file under the agent’s seccomp directory; a container’s own wins over the pod’s', () => {
    const r = pod({ type: 'Localhost', localhostProfile: 'profiles/audit.json' }, { type: 'Localhost', localhostProfile: 'own.json' });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    const spec = (root?: string) =>
      buildContainerSpec(r.manifest, r.manifest.containers[0]!, {
        node: 'n',
        source: 'file',
        ...(root === undefined ? {} : { seccompProfileRoot: root }),
      });
    expect(spec('/var/lib/kubelet-ts/seccomp/').security?.seccomp).toEqual({
      type: 'Localhost',
      localhostProfile: '/var/lib/kubelet-ts/seccomp/own.json',
    });
    expect(localhostSeccompProblem(spec('/var/lib/kubelet-ts/seccomp').security)).toBeUndefined();
    // Without a directory the name stays a name, which no runtime can open: it says what to give.
    expect(spec().security?.seccomp).toEqual({ type: 'Localhost', localhostProfile: 'own.json' });
    expect(localhostSeccompProblem(spec().security)).toContain('give one (--seccomp-profile-root, KubeletOptions.seccompProfileRoot)');
    expect(localhostSeccompProblem({ seccomp: { type: 'RuntimeDefault' } })).toBeUndefined();
  });
});
