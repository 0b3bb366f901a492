// Loaded into the agent child before its own code (`--import`, with `--expose-gc`): on `gc` from
// the parent, a full collection, then `{ gc: true }`. What the agent retains is then told apart
// from garbage not yet collected, which makes its RSS swing by tens of MB between readings.
const gc = (globalThis as { gc?: () => void }).gc;
process.on('message', (message) => {
  if (message !== 'gc' || gc === undefined) return;
  gc();
  gc();
  process.send?.({ gc: true });
});
