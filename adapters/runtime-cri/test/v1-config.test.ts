import { describe, expect, it } from '@jest/globals';
import type { ContainerSpec, SandboxSpec } from '@kubelet-ts/core';
import { buildContainerConfig } from '../src/container-config.js';
import { detailsOf } from '../src/mapping.js';
import { buildSandboxConfig } from '../src/sandbox-config.js';
import type { ContainerStatus } from '../src/cri-api.js';

const sandbox = (fields: Partial<SandboxSpec> = {}): SandboxSpec => ({
  name: 'POD--web--0123abcd',
  podId: 'web',
  hostname: 'web',
  ports: [
    { containerPort: 80, hostPort: 8080, protocol: 'TCP' },
    { containerPort: 81, hostPort: 8081, hostIp: '127.0.0.1', protocol: 'TCP' },
  ],
  labels: {},
  ...fields,
});

const container: ContainerSpec = { name: 'web--main--1', podId: 'web', image: 'busybox', env: {}, ports: [], mounts: [], labels: {} };

describe('CRI configs for the v1 Pod fields', () => {
  it("publishes each port on its own hostIp, else on the adapter's ('' for every address)", () => {
    const config = buildSandboxConfig(sandbox(), { hostIp: '' });
    expect(config.portMappings).toEqual([
      { protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '' },
      { protocol: 'TCP', containerPort: 81, hostPort: 8081, hostIp: '127.0.0.1' },
    ]);
    expect(config.hostname).toBe('web');
    expect(config.linux?.securityContext?.namespaceOptions?.network).toBe('POD');
  });

  it('runs a host-network sandbox in the node network namespace, with no hostname and no port mappings', () => {
    const config = buildSandboxConfig(sandbox({ hostNetwork: true, ports: [] }), { hostIp: '' });
    expect(config.linux?.securityContext?.namespaceOptions).toEqual({ network: 'NODE', pid: 'CONTAINER', ipc: 'POD' });
    expect('hostname' in config).toBe(false);
    expect(config.portMappings).toEqual([]);
    // Its containers join the node's network too, as the kubelet asks.
    expect(buildContainerConfig(container, config, [], undefined).linux?.securityContext?.namespaceOptions?.network).toBe('NODE');
  });

  it('maps entrypoint to CRI command and command to CRI args, and the CPU limit to a CFS quota', () => {
    const config = buildContainerConfig(
      { ...container, entrypoint: ['sh', '-c'], command: ['echo hi'], cpuLimitMillis: 1500 },
      buildSandboxConfig(sandbox(), { hostIp: '' }),
      [],
      'main.log',
    );
    expect(config.command).toEqual(['sh', '-c']);
    expect(config.args).toEqual(['echo hi']);
    expect(config.linux?.resources).toEqual({ cpuPeriod: 100_000, cpuQuota: 150_000 });
    expect(config.logPath).toBe('main.log');
    const only2014 = buildContainerConfig(
      { ...container, command: ['sleep', '1'] },
      buildSandboxConfig(sandbox(), { hostIp: '' }),
      [],
      undefined,
    );
    expect(only2014.args).toEqual(['sleep', '1']);
    expect('command' in only2014).toBe(false);
  });

  it('reads entrypoint, command and the CPU limit back from the verbose status, when the status leaves resources out', () => {
    const status = {
      id: 'c1',
      metadata: { name: 'web--main--1', attempt: 0 },
      state: 'CONTAINER_RUNNING',
      labels: {},
      annotations: {},
      mounts: [],
      resources: null,
    } as unknown as ContainerStatus;
    const info = {
      info: JSON.stringify({
        config: { command: ['sh', '-c'], args: ['echo hi'], linux: { resources: { cpu_period: 100_000, cpu_quota: 25_000 } } },
      }),
    };
    const details = detailsOf(status, info);
    expect(details.spec.entrypoint).toEqual(['sh', '-c']);
    expect(details.spec.command).toEqual(['echo hi']);
    expect(details.spec.cpuLimitMillis).toBe(250);
  });
});
