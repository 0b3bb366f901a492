import { describe, expect, it } from '@jest/globals';
import { parseOptions } from './parse-options.js';
import { HARD_EVICTION_MEMORY_BYTES, nodeAllocatable } from '../src/node-allocatable.js';

const parse = parseOptions;

const GI = 1024 ** 3;

describe('--max-pods, --kube-reserved, --system-reserved: the node’s allocatable, which admission checks (issue 42)', () => {
  it('defaults to the kubelet’s 110 pods and nothing reserved: allocatable is the capacity less the 100Mi hard eviction threshold', () => {
    const options = parse([]);
    expect(options.maxPods).toBe(110);
    expect(nodeAllocatable(options, { cpuMillis: 2000, memoryBytes: 8 * GI })).toEqual({
      pods: 110,
      cpuMillis: 2000,
      memoryBytes: 8 * GI - HARD_EVICTION_MEMORY_BYTES,
    });
  });

  it('takes both reservations off, summed over repeats of a flag, in the kubelet’s quantities', () => {
    const options = parse([
      '--max-pods',
      '30',
      '--kube-reserved',
      'cpu=100m,memory=256Mi',
      '--system-reserved',
      'cpu=0.5',
      '--system-reserved',
      'memory=1Gi',
    ]);
    expect(options.kubeReserved).toEqual({ cpuMillis: 100, memoryBytes: 256 * 1024 ** 2 });
    expect(options.systemReserved).toEqual({ cpuMillis: 500, memoryBytes: GI });
    expect(nodeAllocatable(options, { cpuMillis: 2000, memoryBytes: 8 * GI })).toEqual({
      pods: 30,
      cpuMillis: 1400,
      memoryBytes: 8 * GI - 256 * 1024 ** 2 - GI - HARD_EVICTION_MEMORY_BYTES,
    });
    // More reserved than the host has leaves nothing, never a negative figure.
    expect(nodeAllocatable(parse(['--kube-reserved', 'cpu=4']), { cpuMillis: 2000, memoryBytes: 50 * 1024 ** 2 })).toMatchObject({
      cpuMillis: 0,
      memoryBytes: 0,
    });
  });

  it('refuses what it cannot read, naming the flag or the resource', () => {
    expect(() => parse(['--max-pods', '0'])).toThrow(/--max-pods: expected a whole number of pods from 1 to 100000, got "0"/);
    expect(() => parse(['--max-pods', 'many'])).toThrow(/--max-pods/);
    expect(() => parse(['--kube-reserved', 'ephemeral-storage=1Gi'])).toThrow(/"ephemeral-storage": only cpu and memory are reserved/);
    expect(() => parse(['--system-reserved', 'memory=lots'])).toThrow(/memory=lots: must be a Kubernetes quantity/);
    expect(() => parse(['--kube-reserved', 'cpu=-1'])).toThrow(/cpu=-1: must not be negative/);
  });
});
