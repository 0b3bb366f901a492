import { describe, expect, it } from '@jest/globals';
import { SharedCalls } from '../src/index.js';

describe('SharedCalls', () => {
  it('gives callers of one key in flight one call and its outcome; another key, or a later call, gets its own', async () => {
    const shared = new SharedCalls<number>();
    let calls = 0;
    let release: (value: number) => void = () => {};
    const call = () => {
      calls += 1;
      return new Promise<number>((resolve) => (release = resolve));
    };
    const a = shared.run('img', call);
    const b = shared.run('img', call);
    expect(calls).toBe(1);
    release(7);
    expect(await Promise.all([a, b])).toEqual([7, 7]);
    const c = shared.run('img', call);
    expect(calls).toBe(2);
    release(8);
    expect(await c).toBe(8);
    void shared.run('other', call);
    expect(calls).toBe(3);
  });

  it('hands a failure to every caller that shared it, and lets the next call try again', async () => {
    const shared = new SharedCalls<void>();
    let calls = 0;
    const failing = () => {
      calls += 1;
      return Promise.reject(new Error('no such image'));
    };
    const outcomes = await Promise.allSettled([shared.run('img', failing), shared.run('img', failing)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    await expect(shared.run('img', async () => undefined)).resolves.toBeUndefined();
    expect(calls).toBe(1);
  });
});
