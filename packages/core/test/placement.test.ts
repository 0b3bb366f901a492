import { describe, expect, it } from '@jest/globals';
import {
  Labels,
  buildContainerSpec,
  buildSandboxSpec,
  nodeLabelsOf,
  specHash,
  validateManifest,
  type ContainerManifest,
} from '../src/index.js';

const pod = (placement: object) => ({ id: 'web', containers: [{ name: 'app', image: 'nginx' }], ...placement });
const labels = nodeLabelsOf({ disktype: 'ssd', 'example.com/cores': '16' }, 'node-a');
const errorsOf = (placement: object, nodeLabels: Readonly<Record<string, string>> | 'none' = labels) => {
  const r = validateManifest(pod(placement), nodeLabels === 'none' ? {} : { nodeLabels });
  return r.ok ? [] : r.errors;
};
const term = (...matchExpressions: object[]) => ({ nodeAffinity: { nodeSelectorTerms: [{ matchExpressions }] } });

describe("a pod's placement, checked against this node's labels as the kubelet's admission checks it", () => {
  it('gives a node its hostname, OS and architecture besides the labels it is given', () => {
    expect(labels).toMatchObject({
      'kubernetes.io/hostname': 'node-a',
      'kubernetes.io/os': 'linux',
      'beta.kubernetes.io/os': 'linux',
      disktype: 'ssd',
    });
    expect(labels['kubernetes.io/arch']).toMatch(/^(amd64|arm64|arm|386|[a-z0-9]+)$/);
  });

  it('accepts a nodeSelector the node meets, and keeps it; refuses one it does not, naming the label and the flag', () => {
    const r = validateManifest(pod({ nodeSelector: { disktype: 'ssd', 'kubernetes.io/os': 'linux' } }), { nodeLabels: labels });
    expect(r.ok && r.manifest.nodeSelector).toEqual({ disktype: 'ssd', 'kubernetes.io/os': 'linux' });
    expect(errorsOf({ nodeSelector: { disktype: 'hdd', gpu: 'yes' } })).toEqual([
      { path: 'nodeSelector.disktype', message: expect.stringContaining('this node\'s disktype is "ssd"') },
      { path: 'nodeSelector.gpu', message: expect.stringContaining('--node-labels gpu=yes') },
    ]);
    // An agent given no labels has the OS's and architecture's only.
    expect(errorsOf({ nodeSelector: { 'kubernetes.io/os': 'linux' } }, 'none')).toEqual([]);
    expect(errorsOf({ nodeSelector: { disktype: 'ssd' } }, 'none')).toHaveLength(1);
    expect(errorsOf({ nodeSelector: { 'bad key': 'x' } })).toEqual([
      { path: 'nodeSelector.bad key', message: expect.stringContaining('label key') },
    ]);
  });

  it('takes a required node affinity when one term holds: In, NotIn, Exists, DoesNotExist, Gt, Lt, and the node name', () => {
    for (const ok of [
      term({ key: 'disktype', operator: 'In', values: ['ssd', 'nvme'] }),
      term({ key: 'disktype', operator: 'NotIn', values: ['hdd'] }),
      term({ key: 'zone', operator: 'NotIn', values: ['a'] }),
      term({ key: 'disktype', operator: 'Exists' }, { key: 'gpu', operator: 'DoesNotExist' }),
      term({ key: 'example.com/cores', operator: 'Gt', values: ['8'] }, { key: 'example.com/cores', operator: 'Lt', values: ['32'] }),
      { nodeAffinity: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }] }] } },
      // The terms are ORed: one that holds is enough.
      {
        nodeAffinity: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'zone', operator: 'Exists' }] },
            { matchExpressions: [{ key: 'disktype', operator: 'Exists' }] },
          ],
        },
      },
    ])
      expect(errorsOf(ok)).toEqual([]);
    for (const no of [
      term({ key: 'disktype', operator: 'In', values: ['hdd'] }),
      term({ key: 'disktype', operator: 'Exists' }, { key: 'zone', operator: 'Exists' }),
      term({ key: 'example.com/cores', operator: 'Gt', values: ['16'] }),
      { nodeAffinity: { nodeSelectorTerms: [{}] } },
    ])
      expect(errorsOf(no)).toEqual([{ path: 'nodeAffinity', message: expect.stringContaining('no term matches this node') }]);
  });

  it('refuses a malformed term by its path', () => {
    expect(errorsOf(term({ key: 'a', operator: 'Near', values: ['x'] }))).toEqual([
      { path: 'nodeAffinity.nodeSelectorTerms[0].matchExpressions[0].operator', message: expect.stringContaining('must be one of In') },
    ]);
    expect(errorsOf(term({ key: 'a', operator: 'Gt', values: ['x'] }))[0]?.message).toContain('one integer');
    expect(errorsOf(term({ key: 'a', operator: 'In' }))[0]?.message).toContain('at least one value');
    expect(errorsOf(term({ key: 'a', operator: 'Exists', values: ['x'] }))[0]?.message).toContain('must be empty');
    expect(
      errorsOf({ nodeAffinity: { nodeSelectorTerms: [{ matchFields: [{ key: 'spec.x', operator: 'In', values: ['a'] }] }] } })[0]?.message,
    ).toContain('metadata.name');
  });

  it("takes hostPID and hostIPC only where privileged containers are, into the container's spec and the sandbox", () => {
    const raw = pod({ hostPID: true, hostIPC: true });
    expect(validateManifest(raw).ok).toBe(false);
    expect(errorsOf({ hostPID: true, hostIPC: false })).toEqual([
      { path: 'hostPID', message: expect.stringContaining('--allow-privileged') },
    ]);
    const r = validateManifest(raw, { allowPrivileged: true });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    expect(buildContainerSpec(r.manifest, r.manifest.containers[0]!, { node: 'n', source: 's' })).toMatchObject({
      hostPID: true,
      hostIPC: true,
    });
    expect(buildSandboxSpec(r.manifest, { node: 'n', source: 's' })).toMatchObject({ hostPID: true, hostIPC: true });
    const plain = validateManifest(pod({}));
    if (!plain.ok) throw new Error('plain pod refused');
    const sandboxHash = (m: ContainerManifest) => buildSandboxSpec(m, { node: 'n', source: 's' }).labels[Labels.sandboxHash];
    expect(sandboxHash(r.manifest)).not.toBe(sandboxHash(plain.manifest));
    expect(specHash(r.manifest, r.manifest.containers[0]!)).not.toBe(specHash(plain.manifest, plain.manifest.containers[0]!));
    const both = validateManifest(pod({ hostPID: true, shareProcessNamespace: true }), { allowPrivileged: true });
    expect(both.ok ? [] : both.errors).toEqual([{ path: 'hostPID', message: expect.stringContaining('shareProcessNamespace') }]);
  });

  it("puts the pod's sysctls in its sandbox (all of them, and into its hash) and the IPC ones in each container's spec", () => {
    const withSysctls = (sysctls: object[]) =>
      validateManifest(pod({ securityContext: { sysctls } }), { allowedUnsafeSysctls: ['kernel.msg*'] });
    const r = withSysctls([
      { name: 'net.ipv4.ip_local_port_range', value: '40000 50000' },
      { name: 'kernel.msgmax', value: '65535' },
    ]);
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    const context = { node: 'n', source: 's' };
    expect(buildSandboxSpec(r.manifest, context).sysctls).toEqual({
      'net.ipv4.ip_local_port_range': '40000 50000',
      'kernel.msgmax': '65535',
    });
    expect(buildContainerSpec(r.manifest, r.manifest.containers[0]!, context).ipcSysctls).toEqual({ 'kernel.msgmax': '65535' });
    const other = withSysctls([{ name: 'net.ipv4.ip_local_port_range', value: '40000 50001' }]);
    const plain = validateManifest(pod({}));
    if (!other.ok || !plain.ok) throw new Error('refused');
    const hash = (m: ContainerManifest) => buildSandboxSpec(m, context).labels[Labels.sandboxHash];
    expect(new Set([hash(r.manifest), hash(other.manifest), hash(plain.manifest)]).size).toBe(3);
    // A pod without sysctls keeps the hash it had (no 2014 or v1 pod's sandbox is replaced by the upgrade).
    expect(buildSandboxSpec(plain.manifest, context).sysctls).toBeUndefined();
    expect(buildContainerSpec(plain.manifest, plain.manifest.containers[0]!, context).ipcSysctls).toBeUndefined();
    expect(specHash(other.manifest, other.manifest.containers[0]!)).toBe(specHash(plain.manifest, plain.manifest.containers[0]!));
  });
});
