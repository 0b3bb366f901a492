import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import type { ContainerManifest } from '../src/manifest.js';
import { derivePodStatus, qosClassOf } from '../src/pod-status.js';
import { validateManifest } from '../src/validate.js';

function manifest(containers: Record<string, unknown>[], inits?: Record<string, unknown>[]): ContainerManifest {
  const r = validateManifest({
    id: 'web',
    containers: containers.map((c, i) => ({ name: `c${i}`, image: 'app:1', ...c })),
    ...(inits === undefined ? {} : { initContainers: inits.map((c, i) => ({ name: `i${i}`, image: 'app:1', ...c })) }),
  });
  if (!r.ok) throw new Error(formatFieldErrors(r.errors));
  return r.manifest;
}

const MI = 1024 * 1024;

describe('qosClassOf (the kubelet’s GetPodQOS)', () => {
  it('is BestEffort when no container asks for or limits CPU or memory', () => {
    expect(qosClassOf(manifest([{}, {}]))).toBe('BestEffort');
  });

  it('is Guaranteed when every container limits both and asks for what it limits (a request left out is the limit)', () => {
    expect(
      qosClassOf(
        manifest([
          { memory: 128 * MI, cpuLimitMillis: 500, cpu: 512 },
          { memory: 64 * MI, cpuLimitMillis: 250 },
        ]),
      ),
    ).toBe('Guaranteed');
  });

  it('is Burstable otherwise: a limit missing, a request below its limit, an init container without limits', () => {
    expect(qosClassOf(manifest([{ memory: 128 * MI }]))).toBe('Burstable');
    expect(qosClassOf(manifest([{ memory: 128 * MI, cpuLimitMillis: 500, cpu: 100 }]))).toBe('Burstable');
    expect(qosClassOf(manifest([{ memory: 128 * MI, memoryRequest: 64 * MI, cpuLimitMillis: 500 }]))).toBe('Burstable');
    expect(qosClassOf(manifest([{ memory: 128 * MI, cpuLimitMillis: 500 }], [{ cpu: 100 }]))).toBe('Burstable');
  });
});

describe('derivePodStatus', () => {
  it('gives the qosClass, hostIP and hostIPs, and PodReadyToStartContainers from the sandbox', () => {
    const m = manifest([{}]);
    const status = derivePodStatus(
      {
        id: 'web',
        source: 'file',
        sandboxReady: true,
        podIP: '10.0.0.5',
        containers: [{ name: 'c0', image: 'app:1', state: 'missing', restartCount: 0, started: false, ready: false }],
      },
      m,
      { runtime: 'memory', hostIP: '192.0.2.7' },
    );
    expect(status).toMatchObject({
      phase: 'Pending',
      qosClass: 'BestEffort',
      hostIP: '192.0.2.7',
      hostIPs: [{ ip: '192.0.2.7' }],
      podIP: '10.0.0.5',
      podIPs: [{ ip: '10.0.0.5' }],
    });
    expect(status.conditions[0]).toEqual({ type: 'PodReadyToStartContainers', status: 'True' });
  });
});
