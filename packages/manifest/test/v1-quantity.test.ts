import { describe, expect, it } from '@jest/globals';
import { ceilMillis, ceilUnits, formatBytes, millisOfShares, parseQuantity } from '../src/v1/quantity.js';

function units(input: unknown): bigint {
  const q = parseQuantity(input);
  if (!q.ok) throw new Error(q.message);
  return ceilUnits(q.value);
}
function millis(input: unknown): bigint {
  const q = parseQuantity(input);
  if (!q.ok) throw new Error(q.message);
  return ceilMillis(q.value);
}

describe('Kubernetes quantities', () => {
  it.each([
    ['128Mi', 134217728n],
    ['1Gi', 1073741824n],
    ['1Ki', 1024n],
    ['2Ti', 2n * 1024n ** 4n],
    ['1Pi', 1024n ** 5n],
    ['1Ei', 1024n ** 6n],
    ['1k', 1000n],
    ['100M', 100_000_000n],
    ['1G', 1_000_000_000n],
    ['1T', 10n ** 12n],
    ['1P', 10n ** 15n],
    ['2E', 2n * 10n ** 18n],
    ['1e3', 1000n],
    ['1E3', 1000n],
    ['5e-1', 1n],
    ['123', 123n],
    [123, 123n],
    ['+7', 7n],
    ['0', 0n],
    ['1.5Gi', 1610612736n],
    ['0.5Ki', 512n],
    ['.5k', 500n],
    ['1.', 1n],
    // A fraction of a byte is a whole byte, as Kubernetes rounds Value().
    ['100m', 1n],
    ['1.0001', 2n],
    ['1500m', 2n],
  ])('reads %j as %s units', (input, expected) => {
    expect(units(input)).toBe(expected);
  });

  it.each([
    ['500m', 500n],
    ['0.5', 500n],
    ['1', 1000n],
    ['2.25', 2250n],
    ['250m', 250n],
    ['1e-3', 1n],
    ['0.0001', 1n],
    [0.1, 100n],
    ['1k', 1_000_000n],
  ])('reads %j as %s millis, rounded up', (input, expected) => {
    expect(millis(input)).toBe(expected);
  });

  it.each(['', 'abc', '1.2.3', '10MB', '1mi', '1 Gi', ' 1', 'Gi', '1e', '1e1000', '--1', '1Gi ', 'NaN', '0x10'])(
    'refuses %j with what a quantity looks like',
    (input) => {
      const q = parseQuantity(input);
      expect(q.ok).toBe(false);
      if (!q.ok) expect(q.message).toContain('must be a Kubernetes quantity');
    },
  );

  it.each([null, true, {}, [1], Number.POSITIVE_INFINITY])('refuses %j, which is not a quantity', (input) => {
    expect(parseQuantity(input)).toEqual({ ok: false, message: expect.stringContaining('must be a quantity such as 128Mi') });
  });

  it('keeps the sign, for the caller to refuse', () => {
    const q = parseQuantity('-1Mi');
    expect(q.ok && q.value.numerator < 0n).toBe(true);
  });

  it('writes bytes as Mi when exact, else as the integer', () => {
    expect(formatBytes(134217728)).toBe('128Mi');
    expect(formatBytes(1000000)).toBe('1000000');
    expect(formatBytes(1073741824)).toBe('1024Mi');
  });

  it('gives the smallest request in millis whose kubelet shares are the shares asked for', () => {
    const sharesOf = (m: number) => Math.max(2, Math.floor((m * 1024) / 1000));
    const smallest = new Map<number, number>();
    for (let m = 6000; m >= 1; m--) smallest.set(sharesOf(m), m);
    let inexpressible = 0;
    for (let shares = 2; shares <= 5000; shares++) {
      const m = smallest.get(shares);
      if (m === undefined) inexpressible += 1;
      else expect(millisOfShares(shares)).toBe(m);
    }
    // About one share count in 42 has no milli value (1024 shares, 1000 millis); those come out one share higher.
    expect(inexpressible).toBeGreaterThan(100);
    expect(sharesOf(millisOfShares(1023))).toBe(1024);
    expect(millisOfShares(1024)).toBe(1000);
    expect(millisOfShares(102)).toBe(100);
    expect(millisOfShares(2)).toBe(1);
  });
});
