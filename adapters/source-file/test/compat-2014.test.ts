import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedManifestId } from '@kubelet-ts/core';
import { RecordingSink } from '@kubelet-ts/conformance';
import { FileManifestSource, type FileManifestSourceOptions } from '../src/index.js';

// The container-agent's example: no id, `path` and `key`.
const AGENT_EXAMPLE = `version: v1beta1
volumes:
  - name: vol1
containers:
  - name: container1
    image: foo/bar
    volumeMounts:
      - name: vol1
        path: /mnt/vol1
    env:
      - key: VAR1
        value: "value"
`;
const idLess = (image: string) => `version: v1beta1\ncontainers:\n  - name: main\n    image: ${image}\n`;
const hostMount =
  'version: v1beta1\nid: cadvisor-agent\nvolumes: [{name: varrun}]\ncontainers:\n  - name: cadvisor\n    image: google/cadvisor\n    volumeMounts: [{name: varrun, mountPath: /var/run, mountType: HOST}]\n';

describe('FileManifestSource: manifests as 2014 users wrote them', () => {
  let dir: string;
  const sources: FileManifestSource[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-file-2014-'));
  });

  afterEach(async () => {
    for (const s of sources.splice(0)) await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (options: Partial<FileManifestSourceOptions> = {}) => {
    const sink = new RecordingSink();
    const source = new FileManifestSource({ path: dir, checkFrequencyMs: 60_000, debounceMs: 10, ...options });
    sources.push(source);
    await source.start(sink);
    return { sink, source };
  };

  it('names an id-less manifest after its file, the same on every start', async () => {
    await writeFile(join(dir, 'example.yaml'), AGENT_EXAMPLE);
    const { sink } = await start();
    const id = derivedManifestId('example.yaml', join(dir, 'example.yaml'));
    expect(sink.ids).toEqual([id]);
    expect(id).toMatch(/^example-yaml-[0-9a-f]{12}$/);
    const again = await start();
    expect(again.sink.ids).toEqual([id]);
  });

  it('runs two id-less files of one directory as two pods, with no conflict', async () => {
    await writeFile(join(dir, 'a.manifest'), idLess('app:a'));
    await writeFile(join(dir, 'b.manifest'), idLess('app:b'));
    const { sink } = await start();
    expect(sink.ids).toHaveLength(2);
    expect(
      sink.updates
        .at(-1)!
        .map((m) => m.containers[0]!.image)
        .sort(),
    ).toEqual(['app:a', 'app:b']);
    expect(sink.errors).toEqual([]);
  });

  it('names the manifests of an id-less list by their position in the file', async () => {
    await writeFile(join(dir, 'pods.yaml'), `- ${idLess('app:0').replaceAll('\n', '\n  ')}\n- ${idLess('app:1').replaceAll('\n', '\n  ')}`);
    const { sink } = await start();
    const path = join(dir, 'pods.yaml');
    expect(sink.updates.at(-1)!.map((m) => [m.id, m.containers[0]!.image])).toEqual([
      [derivedManifestId('pods.yaml', path, 0), 'app:0'],
      [derivedManifestId('pods.yaml', path, 1), 'app:1'],
    ]);
  });

  it('keeps the last good version of an id-less manifest that turns invalid', async () => {
    await writeFile(join(dir, 'web'), idLess('app:1'));
    const { sink, source } = await start();
    await writeFile(join(dir, 'web'), idLess('app:2').replace('name: main', 'name: Main'));
    await source.refresh();
    expect(sink.errors.map((e) => e.fieldErrors.map((f) => f.path))).toEqual([['containers[0].name']]);
    expect(sink.image(sink.ids[0]!)).toBe('app:1');
  });

  it('reads path and key, and warns once per deprecated field and manifest version', async () => {
    await writeFile(join(dir, 'example.yaml'), AGENT_EXAMPLE);
    const { sink, source } = await start();
    const [m] = sink.updates.at(-1)!;
    expect(m!.containers[0]!.volumeMounts).toEqual([{ name: 'vol1', mountPath: '/mnt/vol1', readOnly: false }]);
    expect(m!.containers[0]!.env).toEqual([{ name: 'VAR1', value: 'value' }]);
    expect(sink.warnings.map((w) => [w.reason, w.podId, w.field])).toEqual([
      ['DeprecatedField', m!.id, 'containers[].env[].key'],
      ['DeprecatedField', m!.id, 'containers[].volumeMounts[].path'],
    ]);
    expect(sink.warnings[0]!.message).toContain(join(dir, 'example.yaml'));
    await source.refresh(); // re-read, unchanged: nothing said again
    await writeFile(join(dir, 'example.yaml'), AGENT_EXAMPLE);
    await source.refresh();
    expect(sink.warnings).toHaveLength(2);
    await writeFile(join(dir, 'example.yaml'), AGENT_EXAMPLE.replace('foo/bar', 'foo/bar:2'));
    await source.refresh();
    expect(sink.warnings).toHaveLength(4);
  });

  it('refuses HOST mounts, naming --allow-host-mounts, unless allowHostMounts is set', async () => {
    await writeFile(join(dir, 'cadvisor.manifest'), hostMount);
    const refused = await start();
    expect(refused.sink.ids).toEqual([]);
    expect(refused.sink.errors[0]!.fieldErrors).toEqual([
      { path: 'containers[0].volumeMounts[0].mountType', message: expect.stringContaining('--allow-host-mounts') },
    ]);
    const allowed = await start({ allowHostMounts: true });
    expect(allowed.sink.ids).toEqual(['cadvisor-agent']);
    expect(allowed.sink.updates.at(-1)![0]!.containers[0]!.volumeMounts[0]!.mountType).toBe('HOST');
  });
});
