import { describe, expect, it } from '@jest/globals';
import { parseManifests } from '../src/parse.js';
import { accepted, pod, type Obj } from './v1-pod-fixture.js';

describe('v1 Pod: securityContext.sysctls, as the kubelet admits them', () => {
  const withSysctls = (sysctls: unknown, spec: Obj = {}) => pod({}, { securityContext: { sysctls }, ...spec });
  const parse = (input: unknown, allowedUnsafeSysctls?: readonly string[]) =>
    parseManifests(JSON.stringify(input), 'test.json', {
      allowHostNetwork: true,
      allowPrivileged: true,
      ...(allowedUnsafeSysctls === undefined ? {} : { allowedUnsafeSysctls }),
    });

  it('keeps safe sysctls, a name written with / read with .', () => {
    const m = accepted(
      withSysctls([
        { name: 'net.ipv4.ip_local_port_range', value: '40000 50000' },
        { name: 'net/ipv4/tcp_syncookies', value: '1' },
        { name: 'kernel.shm_rmid_forced', value: '1' },
      ]),
    );
    expect(m.securityContext?.sysctls).toEqual([
      { name: 'net.ipv4.ip_local_port_range', value: '40000 50000' },
      { name: 'net.ipv4.tcp_syncookies', value: '1' },
      { name: 'kernel.shm_rmid_forced', value: '1' },
    ]);
    expect(accepted(withSysctls([])).securityContext).toBeUndefined();
  });

  it('takes an unsafe one only where --allowed-unsafe-sysctls names it or a prefix of it', () => {
    const msg = withSysctls([
      { name: 'kernel.msgmax', value: '65535' },
      { name: 'net.core.somaxconn', value: '1024' },
    ]);
    expect(parse(msg).manifests).toEqual([]);
    expect(parse(msg, ['kernel.msg*', 'net.core.somaxconn']).manifests[0]?.securityContext?.sysctls).toHaveLength(2);
    expect(parse(msg, ['kernel.msg*']).rejected[0]?.errors).toEqual([
      { path: 'spec.securityContext.sysctls[1].name', message: expect.stringContaining('--allowed-unsafe-sysctls net.core.somaxconn') },
    ]);
  });

  it.each([
    [[{ name: 'vm.swappiness', value: '10' }], {}, "vm.swappiness is the node's, not the pod's"],
    [[{ name: 'net.ipv4.tcp_syncookies', value: '1' }], { hostNetwork: true }, "would change the host's network"],
    [[{ name: 'kernel.shm_rmid_forced', value: '1' }], { hostIPC: true }, "would change the host's IPC namespace"],
    [
      [
        { name: 'net.ipv4.tcp_syncookies', value: '1' },
        { name: 'net/ipv4/tcp_syncookies', value: '0' },
      ],
      {},
      'net.ipv4.tcp_syncookies is set twice',
    ],
    [[{ name: 'Net.IPv4', value: '1' }], {}, 'must be a sysctl name'],
    [[{ name: 'net.ipv4.tcp_syncookies', value: '1\nkernel.x=1' }], {}, 'must be one line without control characters'],
    [[{ name: 'net.ipv4.tcp_syncookies' }], {}, 'is required'],
    [[{ name: 'net.ipv4.tcp_syncookies', value: '1', extra: true }], {}, 'not supported'],
  ])('%# refuses %j', (sysctls, spec, message) => {
    const errors = parse(withSysctls(sysctls, spec), ['kernel.*', 'vm.*']).rejected[0]?.errors ?? [];
    expect(errors).toContainEqual({
      path: expect.stringMatching(/^spec\.securityContext\.sysctls\[\d\]/),
      message: expect.stringContaining(message),
    });
  });
});
