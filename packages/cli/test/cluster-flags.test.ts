import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@kubelet-ts/core';
import { parseOptions, writeUnreachableKubeconfig } from './parse-options.js';
import { wire } from '../src/wiring.js';

const parse = parseOptions;

let dir: string;
let kubeconfig: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-cluster-flags-'));
  kubeconfig = join(dir, 'kubeconfig');
  // A cluster nothing serves: the flags are checked before anything is dialled.
  await writeUnreachableKubeconfig(kubeconfig);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('--kubeconfig and the node flags (issue 43)', () => {
  it('makes the agent a node: its API pod source is registered beside the others', async () => {
    const wiring = await wire(
      parse(['--kubeconfig', kubeconfig, '--node-ip', '192.0.2.7', '--port', '0', '--cert-dir', join(dir, 'pki')]),
      'node-1',
      silentLogger,
    );
    expect(wiring.cluster?.source.name).toBe('api');
    await wiring.close();
    const standalone = await wire(parse(['--port', '0']), 'node-1', silentLogger);
    expect(standalone.cluster).toBeUndefined();
    await standalone.close();
  });

  it('refuses a loopback or unreadable --node-ip, naming it', async () => {
    await expect(wire(parse(['--kubeconfig', kubeconfig, '--node-ip', '127.0.0.1']), 'node-1', silentLogger)).rejects.toThrow(
      /--node-ip 127\.0\.0\.1 is a loopback address: the API server could not reach the agent there/,
    );
    await expect(wire(parse(['--kubeconfig', kubeconfig, '--node-ip', 'here']), 'node-1', silentLogger)).rejects.toThrow(
      /--node-ip "here" is not an IP address/,
    );
  });

  it('reads --register-with-taints as the kubelet writes them, and refuses a taint without an effect', () => {
    expect(parse(['--register-with-taints', 'dedicated=gpu:NoSchedule,spot:PreferNoSchedule']).registerWithTaints).toEqual([
      { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
      { key: 'spot', effect: 'PreferNoSchedule' },
    ]);
    expect(() => parse(['--register-with-taints', 'dedicated=gpu'])).toThrow(/a taint is key\[=value\]:Effect/);
    expect(() => parse(['--register-with-taints', 'Bad Key:NoSchedule'])).toThrow(/must be a label key/);
  });

  it('reads --pod-api-server as host:port (IPv6 in brackets), and refuses one without a port or out of range', () => {
    expect(parse(['--pod-api-server', '192.0.2.2:6443']).podApiServer).toEqual({ host: '192.0.2.2', port: 6443 });
    expect(parse(['--pod-api-server', 'api.example:443']).podApiServer).toEqual({ host: 'api.example', port: 443 });
    expect(parse(['--pod-api-server', '[fd00::2]:6443']).podApiServer).toEqual({ host: 'fd00::2', port: 6443 });
    expect(parse([]).podApiServer).toBeUndefined();
    expect(() => parse(['--pod-api-server', '192.0.2.2'])).toThrow(/must be host:port/);
    expect(() => parse(['--pod-api-server', '192.0.2.2:70000'])).toThrow(/the port 1-65535/);
  });

  it('has the kubelet’s defaults: a 40 s lease, status every 10 s, reported at least every 5 min', () => {
    expect(parse([])).toMatchObject({
      nodeLeaseDurationSeconds: 40,
      nodeStatusUpdateFrequency: 10_000,
      nodeStatusReportFrequency: 300_000,
    });
    expect(() => parse(['--node-lease-duration-seconds', '2'])).toThrow(
      /--node-lease-duration-seconds: expected whole seconds from 4 to 3600/,
    );
  });
});
