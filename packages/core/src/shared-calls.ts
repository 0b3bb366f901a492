/**
 * A single flight per key: a call made while one for the same key is in flight shares it, and gets
 * its outcome, instead of starting another. The image services keep one pull per image so
 * (the contract of `ImageService.pull`).
 */
export class SharedCalls<T> {
  private readonly inFlight = new Map<string, Promise<T>>();

  run(key: string, call: () => Promise<T>): Promise<T> {
    let pending = this.inFlight.get(key);
    if (pending === undefined) {
      pending = call().finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }
}
