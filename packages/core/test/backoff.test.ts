import { describe, expect, it } from '@jest/globals';
import { Backoff, backoffDelay } from '../src/backoff.js';

describe('backoffDelay', () => {
  const crash = { initialMs: 10_000, maxMs: 300_000 };

  it('waits initialMs on the first attempt and doubles up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(n, crash))).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  });

  it('counts an attempt below 1 as the first', () => {
    expect(backoffDelay(0, crash)).toBe(10_000);
    expect(backoffDelay(-3, crash)).toBe(10_000);
  });

  it('stays finite and capped however many attempts failed', () => {
    for (const attempt of [31, 1_000, 1_000_000, Number.MAX_SAFE_INTEGER]) expect(backoffDelay(attempt, crash)).toBe(300_000);
    expect(backoffDelay(5_000, { initialMs: 0, maxMs: 1_000 })).toBe(0);
    expect(Number.isFinite(backoffDelay(5_000, { initialMs: 1, maxMs: Number.POSITIVE_INFINITY }))).toBe(true);
  });
});

describe('backoffDelay with jitter', () => {
  it('takes up to `jitter` of each delay off at random, and never goes past the cap', () => {
    const policy = { initialMs: 100, maxMs: 200, jitter: 0.5 };
    const randoms = [0, 0.5, 0.999, 0.2];
    expect([1, 2, 3, 4].map((n) => backoffDelay(n, policy, () => randoms.shift()!))).toEqual([100, 150, 100, 180]);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(9, policy);
      expect(d).toBeGreaterThanOrEqual(100);
      expect(d).toBeLessThanOrEqual(200);
    }
  });

  it('asks nothing random without a jitter (the planner stays a pure function)', () => {
    const random = () => {
      throw new Error('asked');
    };
    expect(backoffDelay(2, { initialMs: 100, maxMs: 200 }, random)).toBe(200);
    expect(backoffDelay(2, { initialMs: 100, maxMs: 200, jitter: 0 }, random)).toBe(200);
  });
});

describe('Backoff', () => {
  it('counts its tries, doubling, and starts over after reset', () => {
    const backoff = new Backoff(100, 500);
    expect([backoff.next(), backoff.next(), backoff.next(), backoff.next()]).toEqual([100, 200, 400, 500]);
    expect(backoff.attempts).toBe(4);
    backoff.reset();
    expect(backoff.attempts).toBe(0);
    expect(backoff.next()).toBe(100);
  });
});
