import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileManifestSource, isManifestFileName } from '../src/index.js';
import { RecordingSink, heldClock } from '@kubelet-ts/conformance';
import { systemClock } from '@kubelet-ts/core';

const manifest = (id: string, image = 'app:1') => `version: v1beta1\nid: ${id}\ncontainers:\n  - name: main\n    image: ${image}\n`;

describe('FileManifestSource', () => {
  let dir: string;
  let source: FileManifestSource | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-file-'));
  });

  afterEach(async () => {
    await source?.close();
    source = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (path = dir, checkFrequencyMs = 60_000) => {
    const sink = new RecordingSink();
    source = new FileManifestSource({ path, checkFrequencyMs, debounceMs: 20 });
    await source.start(sink);
    return sink;
  };

  it('re-lists and debounces on the clock it is given', async () => {
    const { clock, timers } = heldClock();
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const sink = new RecordingSink();
    source = new FileManifestSource({ path: dir, checkFrequencyMs: 20_000, debounceMs: 20, clock });
    await source.start(sink);
    expect(timers.map((t) => t.ms)).toEqual([20_000]); // the periodic re-list
    await writeFile(join(dir, 'b.yaml'), manifest('b'));
    await new Promise((r) => setTimeout(r, 300));
    expect(sink.updates).toHaveLength(1); // the watch event's read waits for the clock too
    timers[0]!.fire(); // the re-list falls due: it re-arms, and asks for a read at once
    const read = timers.filter((t) => t.ms === 0).at(-1);
    expect(read).toBeDefined();
    read!.fire();
    await sink.until(() => sink.ids.join() === 'a,b', 'the re-list');
  });

  it('delivers every manifest of a directory at start, including lists in one file', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    await writeFile(
      join(dir, 'b.json'),
      JSON.stringify([
        { id: 'b', containers: [{ name: 'main', image: 'app:1' }] },
        { id: 'c', containers: [{ name: 'main', image: 'app:1' }] },
      ]),
    );
    const sink = await start();
    expect(sink.updates).toHaveLength(1);
    expect(sink.ids).toEqual(['a', 'b', 'c']);
  });

  it("after the agent's restart, runs what it kept for a file unreadable since then beside the readable files, until that file reads (issue 27 item 2)", async () => {
    const kept = new RecordingSink();
    source = new FileManifestSource({ path: dir, checkFrequencyMs: 60_000, debounceMs: 20 });
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    await writeFile(join(dir, 'b.yaml'), manifest('b'));
    await source.start(kept);
    const restored = kept.updates.at(-1)!;
    await source.close();

    await writeFile(join(dir, 'a.yaml'), manifest('a', 'app:2'));
    await writeFile(join(dir, 'b.yaml'), 'version: v1beta1\nid: b\ncontainers: [ {');
    const sink = Object.assign(new RecordingSink(), { restored });
    source = new FileManifestSource({ path: dir, checkFrequencyMs: 60_000, debounceMs: 20 });
    await source.start(sink);
    expect(sink.updates.at(-1)!.map((m) => `${m.id}=${m.containers[0]!.image}`)).toEqual(['a=app:2', 'b=app:1']);
    await writeFile(join(dir, 'b.yaml'), manifest('c'));
    await sink.until(() => sink.ids.join() === 'a,c', 'b.yaml to read, and alone say what it runs');
  });

  // 2014 read every file of the directory whose name does not start with a dot (`cadvisor.manifest`).
  it('reads every file whatever its extension, but not dotfiles, backup and swap files or subdirectories', async () => {
    await writeFile(join(dir, 'web.yaml'), manifest('web', 'app:new'));
    await writeFile(join(dir, 'cadvisor.manifest'), manifest('cadvisor'));
    await writeFile(join(dir, 'pods'), manifest('plain'));
    await writeFile(join(dir, 'notes.txt'), manifest('notes'));
    await writeFile(join(dir, 'web.yaml.bak'), manifest('web', 'app:stale'));
    await writeFile(join(dir, 'web.yaml~'), manifest('web', 'app:stale'));
    await writeFile(join(dir, 'web.yaml.swp'), manifest('web', 'app:stale'));
    await writeFile(join(dir, '.web.yaml.swp'), manifest('web', 'app:stale'));
    await writeFile(join(dir, '#web.yaml#'), manifest('web', 'app:stale'));
    await writeFile(join(dir, 'web.yaml.dpkg-old'), manifest('web', 'app:stale'));
    await writeFile(join(dir, '.hidden.yaml'), manifest('hidden'));
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'deep.yaml'), manifest('deep'));
    const sink = await start();
    expect(sink.ids).toEqual(['cadvisor', 'notes', 'plain', 'web']);
    expect(sink.image('web')).toBe('app:new');
    expect(sink.errors).toEqual([]);
    expect(['web.yaml', 'a.yml', 'b.JSON', 'cadvisor.manifest', 'pods', 'x.conf', 'a~b'].every(isManifestFileName)).toBe(true);
    expect(
      [
        '.a.yaml',
        'a.yaml.bak',
        'a.yaml~',
        'a.swp',
        'a.yaml.swo',
        '#a.yaml#',
        'a.orig',
        'a.yaml.rpmnew',
        'a.yaml.dpkg-dist',
        'a.tmp',
        '',
      ].some(isManifestFileName),
    ).toBe(false);
  });

  it('reports a file that is not a manifest (a README), never skipping it in silence', async () => {
    await writeFile(join(dir, 'web.yaml'), manifest('web'));
    await writeFile(join(dir, 'README'), 'These are the manifests of this host.\n');
    const sink = await start();
    expect(sink.ids).toEqual(['web']);
    expect(sink.errors.map((e) => [e.code, e.message])).toEqual([
      ['InvalidManifest', `${join(dir, 'README')}: the document is a string, not a manifest`],
    ]);
  });

  it('follows edits, new files, deletions and rename-saves through the watcher', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const sink = await start();
    await writeFile(join(dir, 'b.yaml'), manifest('b'));
    await sink.until(() => sink.ids.join() === 'a,b', 'b added');
    await writeFile(join(dir, 'a.yaml'), manifest('a', 'app:2'));
    await sink.until(() => sink.image('a') === 'app:2', 'a edited');
    // An editor that saves by writing a temp file and renaming it over the original.
    await writeFile(join(dir, '.a.yaml.tmp'), manifest('a', 'app:3'));
    await rename(join(dir, '.a.yaml.tmp'), join(dir, 'a.yaml'));
    await sink.until(() => sink.image('a') === 'app:3', 'a rename-saved');
    await rm(join(dir, 'b.yaml'));
    await sink.until(() => sink.ids.join() === 'a', 'b deleted');
    expect(sink.updates.every((u) => u.some((m) => m.id === 'a'))).toBe(true); // a never vanished
  });

  it('reports an invalid file with its path and fields, and keeps the other files', async () => {
    await writeFile(join(dir, 'good.yaml'), manifest('good'));
    await writeFile(
      join(dir, 'bad.yaml'),
      'id: bad\ncontainers:\n  - name: main\n    image: app:1\n    ports:\n      - containerPort: 80\n        hostPort: 70000\n',
    );
    const sink = await start();
    expect(sink.ids).toEqual(['good']);
    expect(sink.errors).toHaveLength(1);
    expect(sink.errors[0]?.code).toBe('InvalidManifest');
    expect(sink.errors[0]?.message).toContain(join(dir, 'bad.yaml'));
    expect(sink.errors[0]?.message).toContain('containers[0].ports[0].hostPort: must be 0-65535');
  });

  // Found by the fuzz suite: read as text with replacement characters, a Latin-1 file ran with
  // values its author never wrote.
  it('reports a file that is not UTF-8 as unreadable and keeps its last good manifests', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const sink = await start();
    await writeFile(join(dir, 'a.yaml'), Buffer.from(`${manifest('a')}    env:\n      - name: CITY\n        value: Zürich\n`, 'latin1'));
    await sink.until(() => sink.errors.length === 1, 'the file reported');
    expect(sink.errors[0]?.message).toBe(`${join(dir, 'a.yaml')}: not valid UTF-8`);
    expect(sink.updates).toHaveLength(1);
    expect(sink.ids).toEqual(['a']);
  });

  it('keeps the last good version of a file that turns invalid or is truncated mid-write', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a', 'app:1'));
    const sink = await start();
    await writeFile(join(dir, 'a.yaml'), 'version: v1beta1\nid: a\ncontainers:\n  - name: main\n    image: [');
    await sink.until(() => sink.errors.length === 1, 'syntax error reported');
    await writeFile(join(dir, 'a.yaml'), manifest('a', 'app:1').replace('main', 'Main'));
    await sink.until(() => sink.errors.length === 2, 'field error reported');
    expect(sink.errors[1]?.message).toContain('containers[0].name');
    expect(sink.ids).toEqual(['a']);
    expect(sink.image('a')).toBe('app:1');
    await writeFile(join(dir, 'a.yaml'), manifest('a', 'app:2'));
    await sink.until(() => sink.image('a') === 'app:2', 'a fixed');
  });

  it('resolves two files with the same manifest id by path order and reports it', async () => {
    await writeFile(join(dir, '10-web.yaml'), manifest('web', 'app:first'));
    await writeFile(join(dir, '20-web.yaml'), manifest('web', 'app:second'));
    const sink = await start();
    expect(sink.image('web')).toBe('app:first');
    expect(sink.errors.map((e) => e.code)).toEqual(['Conflict']);
    expect(sink.errors[0]?.message).toContain('20-web.yaml');
  });

  it('treats a missing path as an empty set, and picks it up when it appears', async () => {
    const missing = join(dir, 'later');
    const sink = await start(missing, 100);
    expect(sink.updates).toEqual([[]]);
    expect(sink.errors).toEqual([]);
    await mkdir(missing);
    await writeFile(join(missing, 'x.yaml'), manifest('x'));
    await sink.until(() => sink.ids.join() === 'x', 'x after the directory appeared');
    expect(sink.errors).toEqual([]);
  });

  it('watches a single file path', async () => {
    const file = join(dir, 'only.yaml');
    await writeFile(file, manifest('only', 'app:1'));
    const sink = await start(file);
    expect(sink.ids).toEqual(['only']);
    await writeFile(file, manifest('only', 'app:2'));
    await sink.until(() => sink.image('only') === 'app:2', 'single file edited');
  });

  it('does not re-deliver an unchanged set on the periodic re-list', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const sink = await start(dir, 30);
    await new Promise((r) => setTimeout(r, 200));
    expect(sink.updates).toHaveLength(1);
  });

  it('says nothing after close', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const sink = await start();
    await source?.close();
    await writeFile(join(dir, 'b.yaml'), manifest('b'));
    await new Promise((r) => setTimeout(r, 200));
    expect(sink.updates).toHaveLength(1);
  });
});

describe('FileManifestSource: re-lists of unchanged files', () => {
  let dir: string;
  const sources: FileManifestSource[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-file-still-'));
  });

  afterEach(async () => {
    for (const s of sources.splice(0)) await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A clock `aheadMs` ahead of the wall clock: files written now look that old to the source. */
  const start = async (aheadMs: number) => {
    const sink = new RecordingSink();
    const clock = { ...systemClock, now: () => Date.now() + aheadMs };
    const source = new FileManifestSource({ path: dir, checkFrequencyMs: 60_000, debounceMs: 10, clock });
    sources.push(source);
    await source.start(sink);
    return { sink, source };
  };

  it('reads a file that has been still for 2 s once, and reads it again when it changes, even to the same size', async () => {
    for (const id of ['a', 'b', 'c']) await writeFile(join(dir, `${id}.yaml`), manifest(id, 'app:1'));
    const { sink, source } = await start(10_000);
    expect(source.readCount).toBe(3);
    await source.refresh();
    await source.refresh();
    expect(source.readCount).toBe(3);
    expect(sink.ids).toEqual(['a', 'b', 'c']);

    await writeFile(join(dir, 'b.yaml'), manifest('b', 'app:2'));
    await source.refresh();
    expect(source.readCount).toBe(4);
    expect(sink.image('b')).toBe('app:2');
  });

  it('reads again a file that changed within 2 s of its read (its next change may keep its times)', async () => {
    for (const id of ['a', 'b']) await writeFile(join(dir, `${id}.yaml`), manifest(id));
    const { source } = await start(0);
    expect(source.readCount).toBe(2);
    await source.refresh();
    expect(source.readCount).toBe(4);
  });

  it('reads every file again when it is started again, so that it says its warnings again', async () => {
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const { sink, source } = await start(10_000);
    await source.close();
    await source.start(sink);
    expect(source.readCount).toBe(2);
  });
});
