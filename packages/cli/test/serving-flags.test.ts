import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingLogger, RecordingSink } from '@kubelet-ts/conformance';
import { silentLogger } from '@kubelet-ts/core';
import { parseOptions as parse, writeUnreachableKubeconfig } from './parse-options.js';
import { wire } from '../src/wiring.js';

/**
 * The flags of the node's port (issue 44): the kubelet's serving certificate, its webhook
 * authentication and authorization (on by default with --kubeconfig, as in its configuration file),
 * and the feature it declares to the API server.
 */

let dir: string;
let kubeconfig: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-serving-flags-'));
  kubeconfig = join(dir, 'kubeconfig');
  // A cluster nothing serves: nothing here dials it.
  await writeUnreachableKubeconfig(kubeconfig);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the defaults of a node of a cluster', () => {
  it('with --kubeconfig: 0.0.0.0, token and access reviews on, anonymous off, the WebSocket feature declared', () => {
    const options = parse(['--kubeconfig', kubeconfig]);
    expect(options.address).toBe('0.0.0.0');
    expect(options.authenticationTokenWebhook).toBeUndefined();
    expect(options.anonymousAuth).toBe(false);
    expect(options.featureGates).toEqual({});
    // Without: loopback, as before.
    expect(parse([]).address).toBe('127.0.0.1');
    expect(parse(['--kubeconfig', kubeconfig, '--address', '127.0.0.1']).address).toBe('127.0.0.1');
  });

  it('serves HTTPS with a self-signed certificate for the node in --cert-dir, reviewed by the cluster', async () => {
    const certDir = join(dir, 'pki-a');
    const logger = new RecordingLogger();
    const wiring = await wire(
      parse(['--kubeconfig', kubeconfig, '--node-ip', '192.0.2.7', '--port', '0', '--cert-dir', certDir]),
      'node-a',
      logger,
    );
    try {
      const cert = new X509Certificate(await readFile(join(certDir, 'kubelet.crt')));
      expect(cert.subjectAltName).toBe('DNS:node-a, IP Address:192.0.2.7');
      await wiring.server!.start(new RecordingSink());
      expect(wiring.server!.url).toMatch(/^https:\/\/0\.0\.0\.0:\d+$/);
      expect(
        logger
          .at('warn')
          .map((e) => e.message)
          .join('\n'),
      ).toContain('--kubeconfig without --client-ca-file');
    } finally {
      await wiring.server?.close();
      await wiring.close();
    }
  });

  it('--client-ca-file goes with the made certificate; --tls-cert-file is served instead of one', async () => {
    const certDir = join(dir, 'pki-b');
    const wiring = await wire(
      parse([
        '--kubeconfig',
        kubeconfig,
        '--node-ip',
        '192.0.2.7',
        '--port',
        '0',
        '--cert-dir',
        certDir,
        '--client-ca-file',
        join(certDir, 'kubelet.crt'),
      ]),
      'node-b',
      silentLogger,
    );
    await wiring.close();
    await expect(
      wire(
        parse([
          '--kubeconfig',
          kubeconfig,
          '--node-ip',
          '192.0.2.7',
          '--port',
          '0',
          '--tls-cert-file',
          '/nonexistent/c.pem',
          '--tls-private-key-file',
          '/nonexistent/k.pem',
        ]),
        'node-b',
        silentLogger,
      ),
    ).rejects.toThrow(/\/nonexistent\/c\.pem/);
  });

  it('the webhooks and rotation need a cluster to ask, and say so', async () => {
    await expect(wire(parse(['--port', '0', '--authorization-mode', 'Webhook']), 'n', silentLogger)).rejects.toThrow(
      /--authorization-mode Webhook asks the cluster who calls the agent: give --kubeconfig/,
    );
    await expect(wire(parse(['--port', '0', '--authentication-token-webhook']), 'n', silentLogger)).rejects.toThrow(
      /--authentication-token-webhook asks the cluster/,
    );
    await expect(wire(parse(['--port', '0', '--rotate-server-certificates']), 'n', silentLogger)).rejects.toThrow(
      /--rotate-server-certificates asks the cluster for the serving certificate: give --kubeconfig/,
    );
    expect(() => parse(['--authorization-mode', 'Node'])).toThrow(/Allowed choices are AlwaysAllow, Webhook/);
  });

  it("--bootstrap-kubeconfig needs --kubeconfig (where the node's own is written); --rotate-certificates needs both", async () => {
    await expect(wire(parse(['--port', '0', '--bootstrap-kubeconfig', kubeconfig]), 'n', silentLogger)).rejects.toThrow(
      /--bootstrap-kubeconfig needs --kubeconfig: the path where the node's own kubeconfig is written/,
    );
    await expect(wire(parse(['--port', '0', '--kubeconfig', kubeconfig, '--rotate-certificates']), 'n', silentLogger)).rejects.toThrow(
      /--rotate-certificates renews what --bootstrap-kubeconfig obtained: give both/,
    );
  });

  it('--feature-gates knows ExtendWebSocketsToKubelet, Go booleans, and refuses a gate it does not know', () => {
    expect(parse(['--feature-gates', 'ExtendWebSocketsToKubelet=false']).featureGates).toEqual({ ExtendWebSocketsToKubelet: false });
    expect(parse(['--feature-gates', 'ExtendWebSocketsToKubelet=true']).featureGates).toEqual({ ExtendWebSocketsToKubelet: true });
    expect(() => parse(['--feature-gates', 'SidecarContainers=true'])).toThrow(
      /unknown gate "SidecarContainers"; known: ExtendWebSocketsToKubelet/,
    );
    expect(() => parse(['--feature-gates', 'ExtendWebSocketsToKubelet=maybe'])).toThrow(/expected true or false/);
  });

  it('reads the cache TTLs as durations and --anonymous-auth as a Go boolean', () => {
    const options = parse([
      '--authentication-token-webhook-cache-ttl',
      '10s',
      '--authorization-webhook-cache-authorized-ttl',
      '1m',
      '--authorization-webhook-cache-unauthorized-ttl',
      '5s',
      '--anonymous-auth=true',
    ]);
    expect(options.authenticationTokenWebhookCacheTtl).toBe(10_000);
    expect(options.authorizationWebhookCacheAuthorizedTtl).toBe(60_000);
    expect(options.authorizationWebhookCacheUnauthorizedTtl).toBe(5_000);
    expect(options.anonymousAuth).toBe(true);
    expect(parse(['--anonymous-auth=false']).anonymousAuth).toBe(false);
  });
});
