/** Reads until `read` gives a value, every `everyMs`; fails naming `what` after `ms`. */
export async function until<T>(what: string, read: () => Promise<T | undefined>, ms = 30_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
