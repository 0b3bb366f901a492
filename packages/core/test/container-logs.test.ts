import { describe, expect, it } from '@jest/globals';
import { formatLogTime, parseLogTime, podNameOf } from '../src/index.js';

describe('log times', () => {
  it('are written as the kubelet writes them: UTC, nine fractional digits', () => {
    const time = Date.UTC(2026, 11, 4, 3, 24, 6, 123);
    expect(formatLogTime({ time })).toBe('2026-12-04T03:24:06.123000000Z');
    expect(formatLogTime({ time, nanos: 456_789 })).toBe('2026-12-04T03:24:06.123456789Z');
    expect(formatLogTime({ time: Date.UTC(1999, 0, 1), nanos: 7 })).toBe('1999-01-01T00:00:00.000000007Z');
  });

  it('are read back to the nanosecond from Docker and CRI timestamps, any zone and precision', () => {
    const time = Date.UTC(2026, 11, 4, 3, 24, 6, 123);
    expect(parseLogTime('2026-12-04T03:24:06.123456789Z')).toEqual({ time, nanos: 456_789 });
    expect(parseLogTime('2026-12-04T03:24:06.123Z')).toEqual({ time });
    expect(parseLogTime('2026-12-04T03:24:06Z')).toEqual({ time: time - 123 });
    expect(parseLogTime('2026-12-04T04:24:06.1234+01:00')).toEqual({ time, nanos: 400_000 });
    for (const text of ['2026-12-04T03:24:06.123456789012Z', '2026-12-04 03:24:06Z', 'yesterday', '2026-13-04T03:24:06Z', ''])
      expect(parseLogTime(text)).toBeUndefined();
    const line = { time: Date.UTC(2026, 0, 2, 3, 4, 5, 6), nanos: 789 };
    expect(parseLogTime(formatLogTime(line))).toEqual(line);
  });
});

describe('podNameOf', () => {
  it("is a pod's metadata.name: the id without the namespace a v1 Pod's id carries", () => {
    expect(podNameOf('etcd.kube-system', 'kube-system')).toBe('etcd');
    expect(podNameOf('web', undefined)).toBe('web');
    expect(podNameOf('web', 'default')).toBe('web');
    // A 2014 id with dots is a name of its own, whatever it ends with.
    expect(podNameOf('web.kube-system', undefined)).toBe('web.kube-system');
    expect(podNameOf('web.other', 'kube-system')).toBe('web.other');
  });
  it('parseLogTime reads lines of one second by the fast path, and gives the same as the long one', () => {
    const first = parseLogTime('2026-12-04T03:24:06.123456789Z');
    expect(first).toEqual({ time: Date.parse('2026-12-04T03:24:06.123Z'), nanos: 456789 });
    // Same second: the fast path.
    expect(parseLogTime('2026-12-04T03:24:06.999000000Z')).toEqual({ time: Date.parse('2026-12-04T03:24:06.999Z') });
    expect(parseLogTime('2026-12-04T03:24:06.12x456789Z')).toBeUndefined();
    // Another second, an offset, fewer digits: the long way.
    expect(parseLogTime('2026-12-04T03:24:07.000000001Z')).toEqual({ time: Date.parse('2026-12-04T03:24:07Z'), nanos: 1 });
    expect(parseLogTime('2026-12-04T04:24:06.5+01:00')).toEqual({ time: Date.parse('2026-12-04T03:24:06.500Z') });
    expect(parseLogTime('2026-12-04T03:24:07.250000000Z')).toEqual({ time: Date.parse('2026-12-04T03:24:07.250Z') });
  });
});
