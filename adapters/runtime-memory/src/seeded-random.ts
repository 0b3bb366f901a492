/**
 * A small seeded PRNG (mulberry32): one integer reproduces the whole sequence, so a chaos run that
 * draws every choice from it can be replayed from its seed alone. Not for anything secret.
 */
export class SeededRandom {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('cannot pick from an empty list');
    return items[this.int(items.length)]!;
  }

  /**
   * A new generator seeded from this one: give each concern (faults, changes) its own stream, so
   * that drawing one more number for one of them does not shift every choice of the others.
   */
  fork(): SeededRandom {
    return new SeededRandom(this.int(0x100000000));
  }
}
