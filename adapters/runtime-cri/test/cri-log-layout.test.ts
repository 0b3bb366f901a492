import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { readdir, readFile, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { checkedManifest } from '@kubelet-ts/conformance';
import { buildContainerSpec, buildSandboxSpec, type ContainerManifest, type LogLine } from '@kubelet-ts/core';
import { TEST_IMAGES } from '@kubelet-ts/testkit';
import { criFixture, eventually, type CriFixture } from './fixture.js';

const NODE = `cri-logs-test-${process.pid}`;

/** The numbers of CRI log file lines `<time> stdout F <n>`, in file order. */
/**
 * The numbers a CRI log holds, an entry each, a line containerd wrote in parts (`P` entries, then
 * the `F` that ends it) joined as a reader joins it.
 */
const numbersIn = (text: string) => {
  const numbers: number[] = [];
  let partial = '';
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [, , tag, content = ''] = line.split(' ');
    if (tag === 'P') partial += content;
    else {
      numbers.push(Number(partial + content));
      partial = '';
    }
  }
  return numbers;
};
const contiguous = (numbers: readonly number[]) => numbers.every((n, i) => i === 0 || n === numbers[i - 1]! + 1);

describe('CRI log files on a real containerd: the kubelet layout, links, rotation', () => {
  let f: CriFixture;
  const sandboxes: string[] = [];
  beforeAll(async () => {
    f = await criFixture();
  });
  afterEach(async () => {
    for (const id of sandboxes.splice(0)) await f.runtime.removeSandbox(id);
  });
  afterAll(async () => {
    await f?.close();
  });

  const runPod = async (m: ContainerManifest, runtime = f.runtime) => {
    const sandbox = buildSandboxSpec(m, { node: NODE, source: 'test' });
    const s = await runtime.runSandbox(sandbox);
    sandboxes.push(s.id); // removed by the fixture's runtime: same containerd, same folders
    const start = async (restartCount: number) => {
      const spec = buildContainerSpec(m, m.containers[0]!, { node: NODE, source: 'test', restartCount });
      const c = await runtime.create(spec, s.id);
      await runtime.start(c.id);
      return c;
    };
    return { sandbox, id: s.id, start, folder: join(f.logsRoot, `${sandbox.pod!.namespace}_${sandbox.pod!.name}_${sandbox.pod!.uid}`) };
  };

  it('writes <namespace>_<pod>_<uid>/<container>/<restart count>.log, links it in the links folder, removes both with the container', async () => {
    const m = checkedManifest({
      id: 'layout.shop',
      namespace: 'shop',
      containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sh', '-c', 'echo hello-log && exec sleep 3600'] }],
    });
    const pod = await runPod(m);
    const first = await pod.start(0);
    const second = await pod.start(1);
    const file = join(pod.folder, 'main', '0.log');
    expect(await eventually(async () => readFile(file, 'utf8'))).toMatch(/^\S+ stdout F hello-log\n$/);
    expect(await eventually(async () => readFile(join(pod.folder, 'main', '1.log'), 'utf8'))).toContain('hello-log');
    expect(await readlink(join(f.linksDir, `layout_shop_main-${first.id}.log`))).toBe(file);
    await f.runtime.stop(first.id, 0);
    await f.runtime.remove(first.id);
    expect(await readdir(join(pod.folder, 'main'))).toEqual(['1.log']);
    expect(await readdir(f.linksDir)).toEqual([`layout_shop_main-${second.id}.log`]);
    await f.runtime.removeSandbox(pod.id);
    await expect(stat(pod.folder)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(f.linksDir)).toEqual([]);
  });

  it('rotates under a flood: at most max-files files, the newest one plain, the older gzipped, and no line lost but those rotated away', async () => {
    const runtime = f.another({ containerLogs: { maxSizeBytes: 64 * 1024, maxFiles: 3, intervalMs: 100 } });
    // About 10,000 numbered lines a second, about 0.5 MB of log file a second.
    const flood = 'i=1; while :; do seq $i $((i+999)); i=$((i+1000)); sleep 0.1; done';
    const m = checkedManifest({ id: 'flood', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sh', '-c', flood] }] });
    const pod = await runPod(m, runtime);
    const c = await pod.start(0);
    const abort = new AbortController();
    // What the follower read, as text: a line containerd wrote in parts comes as its parts.
    let read = '';
    const followedNumbers = () =>
      read
        .split('\n')
        .filter((line) => line !== '')
        .map(Number);
    const following = (async () => {
      const lines = (await runtime.logs(c.id, { follow: true, signal: abort.signal })) as AsyncIterable<LogLine>;
      for await (const line of lines) read += Buffer.from(line.content).toString();
    })();
    const folder = join(pod.folder, 'main');
    try {
      // Three rotations at least (a second apart): the first rotated file is then gzipped, and the oldest removed.
      const deadline = Date.now() + 40_000;
      let names: string[] = [];
      while (!(names.some((n) => n.endsWith('.gz')) && names.length === 3 && read.length > 200_000) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        names = await readdir(folder);
      }
      await runtime.stop(c.id, 0);
      await following;
      // A rotation pass may be half done as the container stops (renamed, not yet gzipped): its end is waited for.
      const settled = (list: string[]) => list.length === 3 && list.filter((n) => n.endsWith('.gz')).length === 1;
      for (let i = 0; i < 50 && !settled((names = (await readdir(folder)).sort())); i++) await new Promise((r) => setTimeout(r, 100));
      expect(names.length).toBe(3);
      const [current, gzipped, plain] = names as [string, string, string]; // 0.log, 0.log.<t1>.gz, 0.log.<t2>
      expect(current).toBe('0.log');
      expect(gzipped).toMatch(/^0\.log\.\d{8}-\d{6}\.gz$/);
      expect(plain).toMatch(/^0\.log\.\d{8}-\d{6}$/);
      // The files, oldest first, hold one unbroken run of lines up to the last printed.
      // Read as one text: a line may have been written in parts across a rotation.
      const kept = numbersIn(
        gunzipSync(await readFile(join(folder, gzipped))).toString() +
          (await readFile(join(folder, plain), 'utf8')) +
          (await readFile(join(folder, current), 'utf8')),
      );
      expect(kept.length).toBeGreaterThan(1_000);
      // The oldest file kept may begin with the end of a line whose start was in a file removed since.
      expect(contiguous(kept.slice(1))).toBe(true);
      // The follower, reading from the first line, saw every line across every rotation.
      const followed = followedNumbers();
      expect(followed[0]).toBe(1);
      expect(contiguous(followed)).toBe(true);
      expect(followed[followed.length - 1]).toBe(kept[kept.length - 1]);
    } finally {
      abort.abort();
      await following.catch(() => undefined);
      runtime.close();
    }
  }, 60_000);
});
