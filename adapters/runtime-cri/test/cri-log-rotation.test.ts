import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Labels, silentLogger } from '@kubelet-ts/core';
import type { CriApi } from '../src/cri-api.js';
import { CriLogRotation, rotationTarget, type RotationTarget } from '../src/cri-log-rotation.js';

const START = Date.parse('2026-12-04T03:24:06Z');

describe('CriLogRotation: the kubelet container log manager, on the files the runtime writes', () => {
  let dir: string;
  let path: string;
  let now: number;
  let reopened: string[];
  let reopenFails: boolean;
  /** The runtime: reopening makes a new, empty file at the path (containerd does). */
  const target = (): RotationTarget => ({
    logFiles: async () => [{ id: 'c1', path }],
    reopen: async (id) => {
      if (reopenFails) throw new Error('reopen refused');
      reopened.push(id);
      await writeFile(path, '', { flag: 'a' });
    },
  });
  const rotation = (maxFiles = 3) => new CriLogRotation(target(), { maxSizeBytes: 10, maxFiles }, silentLogger, () => now);
  const files = async () => (await readdir(dir)).sort();
  /** Writes `text` as the runtime would (appends to the current file), then runs a pass a second later. */
  const pass = async (r: CriLogRotation, text: string) => {
    await writeFile(path, text, { flag: 'a' });
    now += 1_000;
    await r.rotate();
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-rotation-'));
    path = join(dir, '0.log');
    now = START;
    reopened = [];
    reopenFails = false;
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('leaves a file under the size alone', async () => {
    const r = rotation();
    await pass(r, 'short\n');
    expect(await files()).toEqual(['0.log']);
    expect(reopened).toEqual([]);
  });

  it('renames a full file with a UTC stamp and has the runtime reopen it; older rotated files are gzipped, the oldest removed', async () => {
    const r = rotation(3);
    await pass(r, 'first-file\n');
    expect(await files()).toEqual(['0.log', '0.log.20261204-032407']);
    expect(reopened).toEqual(['c1']);
    await pass(r, 'second-file\n');
    // The one rotated last stays plain (a follower may still read it); the one before is gzipped.
    expect(await files()).toEqual(['0.log', '0.log.20261204-032407.gz', '0.log.20261204-032408']);
    expect(gunzipSync(await readFile(join(dir, '0.log.20261204-032407.gz'))).toString()).toBe('first-file\n');
    await pass(r, 'third-file\n');
    // maxFiles 3: the current file, the last rotated, one gzipped; the first file's lines are rotated away.
    expect(await files()).toEqual(['0.log', '0.log.20261204-032408.gz', '0.log.20261204-032409']);
    expect(await readFile(join(dir, '0.log.20261204-032409'), 'utf8')).toBe('third-file\n');
    expect(gunzipSync(await readFile(join(dir, '0.log.20261204-032408.gz'))).toString()).toBe('second-file\n');
  });

  it('renames the file back when the runtime cannot reopen it, and tries again next pass', async () => {
    const r = rotation();
    reopenFails = true;
    await pass(r, 'kept-in-place\n');
    expect(await files()).toEqual(['0.log']);
    expect(await readFile(path, 'utf8')).toBe('kept-in-place\n');
    reopenFails = false;
    await pass(r, 'more\n');
    expect(await files()).toEqual(['0.log', '0.log.20261204-032408']);
    expect(await readFile(join(dir, '0.log.20261204-032408'), 'utf8')).toBe('kept-in-place\nmore\n');
  });

  it('rotates a file at most once a second (a second rotation would take the same name)', async () => {
    const r = rotation();
    await pass(r, 'first-file\n');
    await writeFile(path, 'second-file\n', { flag: 'a' });
    await r.rotate(); // same second
    expect(await files()).toEqual(['0.log', '0.log.20261204-032407']);
    expect(reopened).toEqual(['c1']);
  });

  it('removes what an interrupted pass left (a half gzip, a file beside its whole gzip) and asks for a file that is gone', async () => {
    const r = rotation(4);
    await writeFile(join(dir, '0.log.20261204-030000'), 'gzipped, not yet removed\n');
    await writeFile(join(dir, '0.log.20261204-030000.gz'), 'x');
    await writeFile(join(dir, '0.log.20261204-030001.gz.tmp'), 'cut short');
    await pass(r, 'current-file\n');
    expect(await files()).toEqual(['0.log', '0.log.20261204-030000.gz', '0.log.20261204-032407']);
    await rm(path);
    await r.rotate();
    expect(reopened).toEqual(['c1', 'c1']);
    expect(await files()).toContain('0.log');
  });

  it('refuses a policy that keeps no rotated file, and runs its passes on a timer until closed', async () => {
    expect(() => new CriLogRotation(target(), { maxSizeBytes: 10, maxFiles: 1 }, silentLogger)).toThrow('maxFiles must be at least 2');
    expect(() => new CriLogRotation(target(), { maxSizeBytes: 0, maxFiles: 2 }, silentLogger)).toThrow('maxSizeBytes must be positive');
    const r = new CriLogRotation(target(), { maxSizeBytes: 10, maxFiles: 2, intervalMs: 20 }, silentLogger);
    await writeFile(path, 'a full file\n');
    r.start();
    const deadline = Date.now() + 5_000;
    while (reopened.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    await r.close();
    expect(reopened).toEqual(['c1']);
    expect((await files()).length).toBe(2);
  });
});

describe('rotationTarget: the running containers of ours and their log files', () => {
  /** A CRI whose running containers are `listed`, recording its calls. */
  const fakeCri = (initial: Array<{ id: string; state: string; labels: Record<string, string> }>) => {
    const calls: string[] = [];
    const state = { listed: initial, failList: false };
    const cri = {
      listContainers: async (request: { filter?: { state?: { state: string } } }) => {
        calls.push(`list ${request.filter?.state?.state}`);
        if (state.failList) throw new Error('engine down');
        return { containers: state.listed };
      },
      containerStatus: async ({ containerId }: { containerId: string }) => {
        calls.push(`status ${containerId}`);
        return { status: { logPath: `/logs/${containerId}/0.log` } };
      },
    } as unknown as CriApi;
    return { cri, calls, state };
  };
  const running = (id: string, pod: string | undefined) => ({
    id,
    state: 'CONTAINER_RUNNING',
    labels: pod === undefined ? {} : { [Labels.manifestId]: pod },
  });

  it('asks a container its log path once (it never changes), and lists again when told the containers changed', async () => {
    const { cri, calls, state } = fakeCri([running('a', 'web'), running('b', 'db'), running('foreign', undefined)]);
    const target = rotationTarget(cri, (_what, fn) => fn(0));
    expect(await target.logFiles()).toEqual([
      { id: 'a', path: '/logs/a/0.log' },
      { id: 'b', path: '/logs/b/0.log' },
    ]);
    target.changed();
    expect(await target.logFiles()).toHaveLength(2);
    expect(calls).toEqual(['list CONTAINER_RUNNING', 'status a', 'status b', 'list CONTAINER_RUNNING']);
    // b gone, c new: only c is asked; a restarted b (same id, listed again) would be asked again.
    state.listed = [state.listed[0]!, running('c', 'web')];
    calls.length = 0;
    target.changed();
    expect((await target.logFiles()).map((f) => f.id)).toEqual(['a', 'c']);
    expect(calls).toEqual(['list CONTAINER_RUNNING', 'status c']);
  });

  it('makes a steady pass without a list: the last one stands until a change, or a minute, and a failed list is tried again', async () => {
    let now = 0;
    const { cri, calls, state } = fakeCri([running('a', 'web')]);
    const target = rotationTarget(cri, (_what, fn) => fn(0), { now: () => now });
    await target.logFiles();
    for (now = 10_000; now < 60_000; now += 10_000) expect(await target.logFiles()).toEqual([{ id: 'a', path: '/logs/a/0.log' }]);
    expect(calls).toEqual(['list CONTAINER_RUNNING', 'status a']);
    now = 60_000; // what the runtime did not see (a container ended on its own) is found within a minute
    state.listed = [];
    expect(await target.logFiles()).toEqual([]);
    expect(calls.filter((c) => c.startsWith('list'))).toHaveLength(2);
    state.failList = true;
    target.changed();
    await expect(target.logFiles()).rejects.toThrow('engine down');
    state.failList = false;
    state.listed = [running('a', 'web')];
    expect(await target.logFiles()).toEqual([{ id: 'a', path: '/logs/a/0.log' }]);
    expect(calls.filter((c) => c.startsWith('list'))).toHaveLength(4);
  });
});
