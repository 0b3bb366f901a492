import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, buildSandboxSpec, silentLogger, type ContainerSpec } from '@kubelet-ts/core';
import { CriLogFiles } from '../src/cri-log-files.js';

const ID = 'c0ffee'.repeat(10) + 'c0fe';

describe('CriLogFiles: the kubelet log layout', () => {
  let dir: string;
  let files: CriLogFiles;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-log-files-'));
    files = new CriLogFiles({ podLogsDir: join(dir, 'pods'), linksDir: join(dir, 'containers'), logger: silentLogger });
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const container = (labels: Record<string, string>): ContainerSpec => ({
    name: 'k8s--main--web--0',
    podId: 'web',
    image: 'busybox',
    env: {},
    ports: [],
    mounts: [],
    labels: { [Labels.manifestId]: 'web', [Labels.containerName]: 'main', ...labels },
  });

  it('names a pod folder <namespace>_<name>_<uid>, the uid /pods shows; a name that cannot be a folder gets none', () => {
    const v1 = buildSandboxSpec(checkedManifest({ id: 'web.shop', namespace: 'shop', containers: [] }), { node: 'n1', source: 'file' });
    expect(files.podDirectory(v1)).toBe(join(dir, 'pods', `shop_web_${v1.pod!.uid}`));
    expect(v1.pod!.uid).toMatch(/^[0-9a-f]{32}$/);
    const given = buildSandboxSpec(checkedManifest({ id: 'old', uuid: 'a1b2c3', containers: [] }), { node: 'n1', source: 'file' });
    expect(files.podDirectory(given)).toBe(join(dir, 'pods', 'default_old_a1b2c3'));
    expect(files.podDirectory({ ...given, pod: { namespace: 'default', name: 'old', uid: '../../etc' } })).toBeUndefined();
  });

  it('reserves <container>/<restart count>.log, or the next free number when a run of that count left its file', async () => {
    const pod = join(dir, 'pods', 'default_web_u1');
    await files.makePodDirectory(pod);
    expect(await files.reserve(pod, container({ [Labels.restartCount]: '2' }))).toBe(join('main', '2.log'));
    expect(await files.reserve(pod, container({ [Labels.restartCount]: '2' }))).toBe(join('main', '3.log'));
    expect(await files.reserve(pod, container({}))).toBe(join('main', '0.log'));
    expect(await readdir(join(pod, 'main'))).toEqual(['0.log', '2.log', '3.log']);
    expect(await files.reserve(pod, container({ [Labels.containerName]: '../x' }))).toBeUndefined();
  });

  it('links <pod>_<namespace>_<container>-<id>.log to the file, and removes the file, its rotated files and the link', async () => {
    const pod = join(dir, 'pods', 'shop_web_u1');
    await files.makePodDirectory(pod);
    const labels = { ...container({}).labels, [Labels.manifestId]: 'web.shop', [Labels.namespace]: 'shop' };
    const file = join(pod, (await files.reserve(pod, { ...container({}), labels }))!);
    await files.link(file, { id: ID, labels });
    const link = join(dir, 'containers', `web_shop_main-${ID}.log`);
    expect(await readlink(link)).toBe(file);
    await writeFile(`${file}.20261204-032407`, 'rotated');
    await writeFile(`${file}.20261204-032406.gz`, 'older');
    await writeFile(join(pod, 'main', '1.log'), 'another run');
    await files.remove(file, { id: ID, labels });
    expect(await readdir(join(pod, 'main'))).toEqual(['1.log']);
    expect(await readdir(join(dir, 'containers'))).toEqual([]);
  });

  it("leaves files outside its pod folders alone (someone else's container), and only removes its own pod folders", async () => {
    const foreign = join(dir, 'elsewhere', 'x', 'y.log');
    await mkdir(join(dir, 'elsewhere', 'x'), { recursive: true });
    await writeFile(foreign, 'theirs');
    await files.remove(foreign, { id: ID, labels: {} });
    expect(await readdir(join(dir, 'elsewhere', 'x'))).toEqual(['y.log']);
    await files.removePodDirectory(join(dir, 'elsewhere'));
    expect(await readdir(dir)).toContain('elsewhere');
    const pod = join(dir, 'pods', 'default_web_u1');
    await files.makePodDirectory(pod);
    await files.removePodDirectory(pod);
    expect(await readdir(join(dir, 'pods'))).toEqual([]);
  });
});
