import { describe, expect, it } from '@jest/globals';
import { linkVariables, masterVariables, serviceVariablesOf, tokenRefreshDue, type ApiService } from '../src/index.js';

/** The services' variables as the kubelet's `envvars.FromServices` makes them, and when a token is asked for again. */

const service = (
  namespace: string,
  name: string,
  clusterIP: string,
  ports: NonNullable<NonNullable<ApiService['spec']>['ports']>,
): ApiService => ({
  metadata: { name, namespace },
  spec: { clusterIP, ports },
});

describe('service variables', () => {
  it('are FromServices’s: host, first port, named ports, and Docker’s link variables per port and protocol', () => {
    expect(
      serviceVariablesOf([
        service('team', 'web-front', '10.96.0.7', [
          { name: 'http', port: 80, protocol: 'TCP' },
          { name: 'dns-udp', port: 53, protocol: 'UDP' },
        ]),
      ]),
    ).toEqual({
      WEB_FRONT_SERVICE_HOST: '10.96.0.7',
      WEB_FRONT_SERVICE_PORT: '80',
      WEB_FRONT_SERVICE_PORT_HTTP: '80',
      WEB_FRONT_SERVICE_PORT_DNS_UDP: '53',
      WEB_FRONT_PORT: 'tcp://10.96.0.7:80',
      WEB_FRONT_PORT_80_TCP: 'tcp://10.96.0.7:80',
      WEB_FRONT_PORT_80_TCP_PROTO: 'tcp',
      WEB_FRONT_PORT_80_TCP_PORT: '80',
      WEB_FRONT_PORT_80_TCP_ADDR: '10.96.0.7',
      WEB_FRONT_PORT_53_UDP: 'udp://10.96.0.7:53',
      WEB_FRONT_PORT_53_UDP_PROTO: 'udp',
      WEB_FRONT_PORT_53_UDP_PORT: '53',
      WEB_FRONT_PORT_53_UDP_ADDR: '10.96.0.7',
    });
  });

  it('leave out a headless service, one without an address, and one without ports; an IPv6 address is bracketed in URLs', () => {
    expect(
      serviceVariablesOf([
        service('team', 'headless', 'None', [{ port: 80 }]),
        service('team', 'pending', '', [{ port: 80 }]),
        service('team', 'portless', '10.96.0.9', []),
      ]),
    ).toEqual({});
    expect(serviceVariablesOf([service('team', 'six', 'fd00::7', [{ port: 80 }])])['SIX_PORT']).toBe('tcp://[fd00::7]:80');
  });

  it('of a namespace leave out the API server’s, whose variables come from masterVariables: its ClusterIP, or where the pods reach it', () => {
    const all = [
      service('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443, protocol: 'TCP' }]),
      service('default', 'web', '10.96.0.3', [{ port: 80 }]),
      service('team', 'web', '10.96.0.4', [{ port: 80 }]),
    ];
    expect(Object.keys(linkVariables(all, 'default')).some((k) => k.startsWith('KUBERNETES_'))).toBe(false);
    expect(linkVariables(all, 'default')['WEB_SERVICE_HOST']).toBe('10.96.0.3');
    expect(linkVariables(all, 'team')['WEB_SERVICE_HOST']).toBe('10.96.0.4');
    expect(masterVariables(all, undefined)).toMatchObject({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' });
    expect(masterVariables(all, { host: '192.0.2.2', port: 6443 })).toEqual({
      KUBERNETES_SERVICE_HOST: '192.0.2.2',
      KUBERNETES_SERVICE_PORT: '6443',
      KUBERNETES_SERVICE_PORT_HTTPS: '6443',
      KUBERNETES_PORT: 'tcp://192.0.2.2:6443',
      KUBERNETES_PORT_6443_TCP: 'tcp://192.0.2.2:6443',
      KUBERNETES_PORT_6443_TCP_PROTO: 'tcp',
      KUBERNETES_PORT_6443_TCP_PORT: '6443',
      KUBERNETES_PORT_6443_TCP_ADDR: '192.0.2.2',
    });
    expect(masterVariables([], undefined)).toEqual({});
  });
});

describe('a token is asked for again', () => {
  const issuedAt = Date.parse('2026-12-06T10:00:00Z');
  const hour = 3_600_000;
  it('at 80 % of its life, not before', () => {
    const token = { issuedAt, expiresAt: issuedAt + hour };
    expect(tokenRefreshDue(token, issuedAt + 0.79 * hour)).toBe(false);
    expect(tokenRefreshDue(token, issuedAt + 0.8 * hour)).toBe(true);
  });
  it('a day after it was issued, however long it lives', () => {
    const token = { issuedAt, expiresAt: issuedAt + 365 * 24 * hour };
    expect(tokenRefreshDue(token, issuedAt + 23 * hour)).toBe(false);
    expect(tokenRefreshDue(token, issuedAt + 24 * hour)).toBe(true);
  });
});
