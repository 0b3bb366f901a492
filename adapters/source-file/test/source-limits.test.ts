import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingSink } from '@kubelet-ts/conformance';
import type { SourceLimits } from '@kubelet-ts/manifest';
import { FileManifestSource } from '../src/index.js';

const manifest = (id: string, command: readonly string[] = []) => ({ id, containers: [{ name: 'main', image: 'app:1', command }] });
const json = (...manifests: object[]) => JSON.stringify(manifests);

/**
 * Issue 17 item 2: every file is bounded on its own (1 MiB, no aliases, a token budget), but a
 * directory adds them up. Over the source's limits, nothing changes and the problem is said once.
 */
describe('FileManifestSource: what the files may add up to', () => {
  let dir: string;
  let source: FileManifestSource | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-file-limits-'));
  });

  afterEach(async () => {
    await source?.close();
    source = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  /** Reads happen on `refresh` only (no periodic re-list within a test). */
  const start = async (limits: SourceLimits) => {
    const sink = new RecordingSink();
    source = new FileManifestSource({ path: dir, checkFrequencyMs: 600_000, debounceMs: 600_000, limits });
    await source.start(sink);
    return sink;
  };

  it('keeps the set delivered last while the files hold more than maxManifests, and says so once', async () => {
    await writeFile(join(dir, 'a.json'), json(manifest('a1'), manifest('a2')));
    await writeFile(join(dir, 'b.json'), json(manifest('b')));
    const sink = await start({ maxManifests: 3 });
    expect(sink.ids).toEqual(['a1', 'a2', 'b']);
    await writeFile(join(dir, 'c.json'), json(manifest('c')));
    await source!.refresh();
    await source!.refresh();
    expect(sink.updates).toHaveLength(1);
    expect(sink.errors.map((e) => [e.code, e.message])).toEqual([
      [
        'InvalidManifest',
        `${dir}: the files hold 4 manifests, more than the 3 one source may hold (limits.maxManifests); nothing changed until they hold less`,
      ],
    ]);
    // Back within the limits, the files are the truth again.
    await writeFile(join(dir, 'a.json'), json(manifest('a1')));
    await source!.refresh();
    expect(sink.ids).toEqual(['a1', 'b', 'c']);
    expect(sink.errors).toHaveLength(1);
  });

  it('keeps the set delivered last while the files add up to more than maxManifestBytes', async () => {
    const big = (id: string) => manifest(id, ['x'.repeat(4000)]);
    await writeFile(join(dir, 'a.json'), json(big('a')));
    const sink = await start({ maxManifestBytes: 10_000 });
    await writeFile(join(dir, 'b.json'), json(big('b')));
    await source!.refresh();
    expect(sink.ids).toEqual(['a', 'b']);
    await writeFile(join(dir, 'c.json'), json(big('c')));
    await source!.refresh();
    expect(sink.ids).toEqual(['a', 'b']);
    expect(sink.errors.at(-1)?.message).toMatch(
      /: the files hold 12\d\d\d bytes of manifests as JSON, more than the 10000 one source may hold \(limits\.maxManifestBytes\); nothing changed/,
    );
  });

  it('reads one file of more than maxManifests as unreadable, keeping its last good manifests', async () => {
    await writeFile(join(dir, 'a.json'), json(manifest('a1')));
    const sink = await start({ maxManifests: 2 });
    await writeFile(join(dir, 'a.json'), json(manifest('a1'), manifest('a2'), manifest('a3')));
    await source!.refresh();
    expect(sink.ids).toEqual(['a1']);
    expect(sink.errors.map((e) => e.message)).toEqual([
      `${join(dir, 'a.json')}: holds 3 manifests, more than the 2 one source may hold; run fewer pods from it`,
    ]);
  });
});
