import { describe, expect, it } from '@jest/globals';
import { ChangeReporter } from '../src/change-reporter.js';

describe('ChangeReporter', () => {
  it('says a text is new the first time, not again while it repeats, and again after reset', () => {
    const r = new ChangeReporter();
    expect(r.changed('')).toBe(true);
    expect(r.changed('')).toBe(false);
    expect(r.changed('a')).toBe(true);
    expect(r.changed('a')).toBe(false);
    expect(r.changed('b')).toBe(true);
    r.reset();
    expect(r.changed('b')).toBe(true);
  });

  it('reports every error when the list changed, none when it repeats, and again after an empty list', () => {
    const r = new ChangeReporter();
    const said: string[] = [];
    const report = (...messages: string[]) =>
      r.report(
        messages.map((m) => new Error(m)),
        (e) => said.push(e.message),
      );
    report('x', 'y');
    report('x', 'y');
    expect(said).toEqual(['x', 'y']);
    report('x', 'y', 'z');
    expect(said).toEqual(['x', 'y', 'x', 'y', 'z']);
    report();
    report('x');
    expect(said).toEqual(['x', 'y', 'x', 'y', 'z', 'x']);
  });
});
