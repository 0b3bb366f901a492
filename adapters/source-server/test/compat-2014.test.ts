import { afterEach, describe, expect, it } from '@jest/globals';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, type ServerManifestSourceOptions } from '../src/index.js';

// The container-agent's example, which has no id.
const AGENT_EXAMPLE = {
  version: 'v1beta1',
  volumes: [{ name: 'vol1' }],
  containers: [
    {
      name: 'container1',
      image: 'foo/bar',
      volumeMounts: [{ name: 'vol1', readOnly: true, path: '/mnt/vol1' }],
      env: [{ key: 'VAR1', value: 'value' }],
      ports: [{ containerPort: 80 }],
    },
  ],
};

describe('ServerManifestSource: manifests as 2014 users wrote them', () => {
  let source: ServerManifestSource | undefined;

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async (options: ServerManifestSourceOptions = {}) => {
    const sink = new RecordingSink();
    source = new ServerManifestSource({ port: 0, ...options });
    await source.start(sink);
    return { sink, url: source.url };
  };
  const post = (url: string, body: unknown, path = '/container') =>
    fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

  it('still requires an id: a 400 naming id, and nothing changes', async () => {
    const { sink, url } = await start();
    const res = await post(url, AGENT_EXAMPLE);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { fieldErrors: Array<{ path: string; message: string }> };
    expect(body.fieldErrors).toEqual([{ path: 'id', message: 'is required' }]);
    const list = await post(url, [{ ...AGENT_EXAMPLE, id: 'a' }, AGENT_EXAMPLE], '/containers');
    expect(list.status).toBe(400);
    expect(((await list.json()) as { fieldErrors: Array<{ path: string }> }).fieldErrors.map((e) => e.path)).toEqual(['[1].id']);
    expect(sink.updates).toEqual([[]]);
  });

  it('takes the rest of the 2014 shape, with a dotted id, and warns once per manifest version', async () => {
    const { sink, url } = await start();
    const posted = { ...AGENT_EXAMPLE, id: 'example.vm.internal' };
    expect((await post(url, posted)).status).toBe(201);
    const [m] = sink.updates.at(-1)!;
    expect(m!.id).toBe('example.vm.internal');
    expect(m!.containers[0]!.volumeMounts).toEqual([{ name: 'vol1', mountPath: '/mnt/vol1', readOnly: true }]);
    expect(m!.containers[0]!.env).toEqual([{ name: 'VAR1', value: 'value' }]);
    expect(m!.containers[0]!.ports).toEqual([{ containerPort: 80, hostPort: 80, protocol: 'TCP' }]);
    expect(sink.warnings.map((w) => [w.podId, w.field])).toEqual([
      ['example.vm.internal', 'containers[].env[].key'],
      ['example.vm.internal', 'containers[].volumeMounts[].path'],
    ]);
    expect((await post(url, posted)).status).toBe(200); // the same manifest again: nothing said again
    expect(sink.warnings).toHaveLength(2);
    expect((await post(url, { ...posted, uuid: 'second-instance' })).status).toBe(200);
    expect(sink.warnings).toHaveLength(4);
  });

  it('refuses HOST mounts with a 400 naming the flag, unless allowHostMounts is set', async () => {
    const hostMount = {
      id: 'cadvisor',
      volumes: [{ name: 'run' }],
      containers: [{ name: 'c', image: 'x', volumeMounts: [{ name: 'run', mountPath: '/var/run', mountType: 'HOST' }] }],
    };
    const refused = await start();
    const res = await post(refused.url, hostMount);
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('--allow-host-mounts');
    await source!.close();
    const allowed = await start({ allowHostMounts: true });
    expect((await post(allowed.url, hostMount)).status).toBe(201);
    expect(allowed.sink.updates.at(-1)![0]!.containers[0]!.volumeMounts[0]!.mountType).toBe('HOST');
  });
});
