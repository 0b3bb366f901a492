import { describe, expect, it } from '@jest/globals';
import { microTime } from '../src/node-lease.js';
import { nodeObject, nodeStatus, type NodeSpecFacts } from '../src/node-object.js';

const facts: NodeSpecFacts = {
  name: 'n1',
  labels: { disk: 'ssd' },
  taints: [],
  address: '192.0.2.7',
  port: 10250,
  allocatable: { pods: 30, cpuMillis: 1500, memoryBytes: 3 * 1024 ** 3 },
  host: {
    osImage: 'Debian GNU/Linux 12 (bookworm)',
    kernelVersion: '6.1.0',
    architecture: 'amd64',
    bootID: 'b',
    machineID: 'm',
    systemUUID: 'u',
    capacity: { cpuMillis: 2000, memoryBytes: 4 * 1024 ** 3, ephemeralStorageBytes: 10 * 1024 ** 3 },
  },
  kubeletVersion: 'v1.37.0+kubelet-ts.0.1.0',
  containerRuntimeVersion: 'containerd://1.6.20',
};

describe('the Node as the kubelet’s setters make it', () => {
  it('has the kubelet’s labels, then --node-labels; capacity and allocatable in the kubelet’s units; the addresses and the port', () => {
    const node = nodeObject(facts, { ready: true }, new Date('2026-12-06T12:00:00Z'));
    expect(node.metadata?.labels).toEqual({
      'beta.kubernetes.io/arch': 'amd64',
      'beta.kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/hostname': 'n1',
      'kubernetes.io/os': 'linux',
      disk: 'ssd',
    });
    expect(node.status?.capacity).toEqual({ cpu: '2', memory: '4194304Ki', 'ephemeral-storage': '10485760Ki', pods: '30' });
    expect(node.status?.allocatable).toEqual({ cpu: '1500m', memory: '3145728Ki', 'ephemeral-storage': '10485760Ki', pods: '30' });
    expect(node.status?.addresses).toEqual([
      { type: 'InternalIP', address: '192.0.2.7' },
      { type: 'Hostname', address: 'n1' },
    ]);
    expect(node.status?.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 10250 } });
    expect(node.spec).toEqual({});
  });

  it('says Ready with KubeletReady, or not with the agent’s reason; keeps a condition’s transition time while its status holds', () => {
    const t0 = new Date('2026-12-06T12:00:00Z');
    const t1 = new Date('2026-12-06T12:00:10Z');
    const t2 = new Date('2026-12-06T12:00:20Z');
    const ready = nodeStatus(facts, { ready: true }, t0, []).conditions!;
    expect(ready.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'KubeletReady', lastTransitionTime: t0 });
    const still = nodeStatus(facts, { ready: true }, t1, ready).conditions!;
    expect(still.find((c) => c.type === 'Ready')).toMatchObject({ lastHeartbeatTime: t1, lastTransitionTime: t0 });
    const down = nodeStatus(facts, { ready: false, message: 'no sync pass for 40 s' }, t2, still).conditions!;
    expect(down.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'no sync pass for 40 s',
      lastTransitionTime: t2,
    });
    expect(down.find((c) => c.type === 'MemoryPressure')).toMatchObject({ status: 'False', lastTransitionTime: t0 });
  });
});

describe('status.images', () => {
  it('lists the 50 largest images, at most 5 names each, as the kubelet’s setter', () => {
    const images = Array.from({ length: 60 }, (_, i) => ({
      names: Array.from({ length: 7 }, (_, j) => `img${i}:${j}`),
      sizeBytes: i * 10,
    }));
    const listed = nodeStatus(facts, { ready: true }, new Date(), [], [...images, { names: [], sizeBytes: 1e9 }]).images!;
    expect(listed).toHaveLength(50);
    expect(listed[0]).toEqual({ names: ['img59:0', 'img59:1', 'img59:2', 'img59:3', 'img59:4'], sizeBytes: 590 });
    expect(listed.at(-1)?.sizeBytes).toBe(100);
  });
});

describe('microTime', () => {
  it('writes six fractional digits, as the API server reads a MicroTime', () => {
    expect(String(microTime(new Date('2026-12-06T12:00:00.123Z')))).toBe('2026-12-06T12:00:00.123000Z');
  });
});
