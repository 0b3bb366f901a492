import { describe, expect, it } from '@jest/globals';
import { LostReplies, MemoryRuntime, SeededRandom } from '../src/index.js';
import { podSandbox, spec } from './spec-fixture.js';

describe('LostReplies', () => {
  it('lets a call act, then says it timed out', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const lossy = new LostReplies(runtime, new SeededRandom(1), 1);
    const sandbox = await podSandbox(runtime);
    lossy.enable();
    await expect(lossy.runtime.create(spec('a'), sandbox)).rejects.toMatchObject({
      code: 'Timeout',
      message: 'chaos: the reply to create was lost (the call went through)',
    });
    const [created] = runtime.snapshot();
    expect(created).toMatchObject({ name: 'a', state: 'created' });
    await expect(lossy.runtime.start(created!.id)).rejects.toMatchObject({ code: 'Timeout' });
    expect(runtime.snapshot()[0]!.state).toBe('running');
    expect(lossy.lost).toBe(2);
  });

  it('passes every reply on while disabled', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const lossy = new LostReplies(runtime, new SeededRandom(1), 1);
    const created = await lossy.runtime.create(spec('a'), await podSandbox(lossy.runtime));
    await lossy.runtime.start(created.id);
    expect(await lossy.runtime.list()).toHaveLength(1);
    lossy.enable();
    lossy.disable();
    await lossy.runtime.stop(created.id, 0);
    expect(lossy.lost).toBe(0);
  });

  it('keeps every power of the runtime it wraps: events pass whole, a figures reply can be lost', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const lossy = new LostReplies(runtime, new SeededRandom(1), 1);
    expect(Object.keys(lossy.runtime.capabilities).sort()).toEqual(Object.keys(runtime.capabilities).sort());
    const abort = new AbortController();
    const stream = lossy.runtime.capabilities.events!.events(abort.signal)[Symbol.asyncIterator]();
    const first = stream.next();
    const created = await lossy.runtime.create(spec('a'), await podSandbox(lossy.runtime));
    lossy.enable();
    await expect(lossy.runtime.start(created.id)).rejects.toMatchObject({ code: 'Timeout' });
    expect(await first).toMatchObject({ done: false, value: { type: 'started', containerId: created.id } });
    await expect(lossy.runtime.capabilities.stats!.stats(created.id)).rejects.toMatchObject({
      code: 'Timeout',
      message: 'chaos: the reply to stats was lost (the call went through)',
    });
    abort.abort();
    expect(await stream.next()).toMatchObject({ done: true });
  });

  it('loses the same replies for the same seed', async () => {
    const pattern = async (seed: number) => {
      const lossy = new LostReplies(new MemoryRuntime(), new SeededRandom(seed), 0.3);
      lossy.enable();
      const outcomes: boolean[] = [];
      for (let i = 0; i < 40; i++)
        outcomes.push(
          await lossy.runtime.list().then(
            () => true,
            () => false,
          ),
        );
      return outcomes;
    };
    const first = await pattern(7);
    expect(await pattern(7)).toEqual(first);
    expect(first.filter((ok) => !ok).length).toBeGreaterThan(0);
    expect(first.filter((ok) => ok).length).toBeGreaterThan(0);
  });
});
