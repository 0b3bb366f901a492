import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { derivedManifestId } from '@kubelet-ts/core';
import { RecordingSink } from '@kubelet-ts/conformance';
import { HttpManifestSource, type HttpManifestSourceOptions } from '../src/index.js';
import { manifestIdFor } from '../src/http-source.js';

// The container-agent's "private registry" example: no id, `key`, a port without hostPort.
const REGISTRY = `version: v1beta1
containers:
- name: registry
  image: google/docker-registry
  env:
    - key: GCS_BUCKET
      value: my-private-repository-bucket
  ports:
    - name: port5000
      containerPort: 5000
`;
const idLess = (image: string) => ({ version: 'v1beta1', containers: [{ name: 'main', image }] });

describe('HttpManifestSource: manifests as 2014 users wrote them', () => {
  let server: Server;
  let body = '';
  let base = '';
  const sources: HttpManifestSource[] = [];

  beforeEach(async () => {
    server = createServer((_req, res) => res.end(body));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    for (const s of sources.splice(0)) await s.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const start = async (options: Partial<HttpManifestSourceOptions> = {}) => {
    const sink = new RecordingSink();
    const source = new HttpManifestSource({
      url: `${base}/computeMetadata/google-container-manifest`,
      checkFrequencyMs: 60_000,
      ...options,
    });
    sources.push(source);
    await source.start(sink);
    return sink;
  };

  it('names an id-less manifest after the URL, the same on every start, and publishes its port', async () => {
    body = REGISTRY;
    const sink = await start();
    const { name, origin } = manifestIdFor(`${base}/computeMetadata/google-container-manifest`);
    const id = derivedManifestId(name, origin);
    expect(id).toMatch(/^google-container-manifest-[0-9a-f]{12}$/);
    expect(sink.ids).toEqual([id]);
    const [m] = sink.updates.at(-1)!;
    expect(m!.containers[0]!.env).toEqual([{ name: 'GCS_BUCKET', value: 'my-private-repository-bucket' }]);
    expect(m!.containers[0]!.ports).toEqual([{ name: 'port5000', containerPort: 5000, hostPort: 5000, protocol: 'TCP' }]);
    expect((await start()).ids).toEqual([id]);
  });

  it('names the manifests of an id-less list by position, and two URLs differently', async () => {
    body = JSON.stringify([idLess('app:0'), { ...idLess('app:1'), id: 'given' }, idLess('app:2')]);
    const sink = await start();
    const { name, origin } = manifestIdFor(`${base}/computeMetadata/google-container-manifest`);
    expect(sink.updates.at(-1)!.map((m) => m.id)).toEqual([
      derivedManifestId(name, origin, 0),
      'given',
      derivedManifestId(name, origin, 2),
    ]);
    const other = await start({ url: `${base}/other` });
    expect(other.ids.filter((id) => id !== 'given')).not.toContain(derivedManifestId(name, origin, 0));
  });

  it('keeps the id when only the credentials or the fragment of the URL change', () => {
    expect(manifestIdFor('http://user:old@example.com/pods?node=a#x')).toEqual(manifestIdFor('http://user:new@example.com/pods?node=a#y'));
    expect(manifestIdFor('http://example.com/pods?node=a')).not.toEqual(manifestIdFor('http://example.com/pods?node=b'));
    expect(manifestIdFor('http://example.com/').name).toBe('example.com');
  });

  it('warns about key, naming the URL', async () => {
    body = REGISTRY;
    const sink = await start();
    expect(sink.warnings.map((w) => [w.reason, w.field, w.paths])).toEqual([
      ['DeprecatedField', 'containers[].env[].key', ['containers[0].env[0].key']],
    ]);
    expect(sink.warnings[0]!.message).toContain('/computeMetadata/google-container-manifest');
  });

  it('refuses HOST mounts unless allowHostMounts is set', async () => {
    body = JSON.stringify({
      id: 'agent',
      volumes: [{ name: 'logs' }],
      containers: [{ name: 'a', image: 'x', volumeMounts: [{ name: 'logs', mountPath: '/var/log', mountType: 'HOST' }] }],
    });
    const refused = await start();
    expect(refused.errors[0]!.fieldErrors.map((f) => f.path)).toEqual(['containers[0].volumeMounts[0].mountType']);
    expect(refused.errors[0]!.message).toContain('--allow-host-mounts');
    const allowed = await start({ allowHostMounts: true });
    expect(allowed.ids).toEqual(['agent']);
  });
});
