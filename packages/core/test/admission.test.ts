import { describe, expect, it } from '@jest/globals';
import { podRequests } from '../src/admission.js';
import { admissionRefusal, admittedUse, type ContainerManifest } from '../src/index.js';

type Sized = Pick<ContainerManifest, 'containers' | 'initContainers' | 'nodeSelector' | 'nodeAffinity'>;
const c = (figures: { cpu?: number; cpuLimitMillis?: number; memory?: number; memoryRequest?: number }) =>
  ({ name: 'c', image: 'i', ports: [], env: [], volumeMounts: [], ...figures }) as ContainerManifest['containers'][number];
const pod = (containers: ContainerManifest['containers'], extra: Partial<Sized> = {}): Sized => ({ containers, ...extra });

describe('podRequests: the kubelet’s sum', () => {
  it('sums the containers, takes the larger of that and the largest init container, and reads a limit alone as the request', () => {
    // 512 shares is 500m; a limit alone of 300m requests 300m; memory: the request, else the limit.
    expect(podRequests(pod([c({ cpu: 512, memoryRequest: 64 }), c({ cpuLimitMillis: 300, memory: 32 })]))).toEqual({
      cpuMillis: 800,
      memoryBytes: 96,
    });
    expect(
      podRequests({ containers: [c({ cpu: 102 })], initContainers: [c({ cpu: 1024, memory: 10 }), c({ cpu: 51, memory: 500 })] }),
    ).toEqual({ cpuMillis: 1000, memoryBytes: 500 });
    expect(podRequests(pod([c({})]))).toEqual({ cpuMillis: 0, memoryBytes: 0 });
  });
});

describe('admissionRefusal: the kubelet’s GeneralPredicates, in its order', () => {
  const node = { labels: { 'kubernetes.io/hostname': 'n1', disk: 'ssd' }, allocatable: { pods: 2, cpuMillis: 1000, memoryBytes: 1000 } };

  it('admits what fits, and refuses pods before CPU, CPU before memory, resources before placement', () => {
    expect(admissionRefusal(pod([c({ cpu: 512, memory: 500 })]), admittedUse([]), node)).toBeUndefined();
    const full = admittedUse([pod([c({})]), pod([c({})])]);
    expect(admissionRefusal(pod([c({ cpu: 10_000 })], { nodeSelector: { disk: 'hdd' } }), full, node)).toEqual({
      reason: 'OutOfpods',
      message: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
    });
    const half = admittedUse([pod([c({ cpu: 512, memory: 600 })])]);
    expect(admissionRefusal(pod([c({ cpu: 1024, memory: 600 })], { nodeSelector: { disk: 'hdd' } }), half, node)).toMatchObject({
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 1000, used: 500, capacity: 1000",
    });
    expect(admissionRefusal(pod([c({ cpu: 256, memory: 600 })], { nodeSelector: { disk: 'hdd' } }), half, node)).toMatchObject({
      reason: 'OutOfmemory',
      message: "Node didn't have enough resource: memory, requested: 600, used: 600, capacity: 1000",
    });
    expect(admissionRefusal(pod([c({ cpu: 256 })], { nodeSelector: { disk: 'hdd' } }), half, node)).toEqual({
      reason: 'NodeAffinity',
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
  });

  it('checks no resource the pod asks none of, and none the node does not say', () => {
    const over = admittedUse([pod([c({ cpu: 2048, memory: 5000 })])]);
    expect(admissionRefusal(pod([c({})]), over, node)).toBeUndefined();
    expect(admissionRefusal(pod([c({ cpu: 2048, memory: 5000 })]), over, { labels: {}, allocatable: {} })).toBeUndefined();
  });

  it('matches node affinity terms, one of which must hold', () => {
    const affinity = (value: string) => ({
      nodeAffinity: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'disk', operator: 'In' as const, values: [value] }] }] },
    });
    expect(admissionRefusal(pod([c({})], affinity('ssd')), admittedUse([]), node)).toBeUndefined();
    expect(admissionRefusal(pod([c({})], affinity('hdd')), admittedUse([]), node)?.reason).toBe('NodeAffinity');
  });
});
