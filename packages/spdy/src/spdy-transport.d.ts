// spdy-transport publishes no types: what it is typed as is in spdy-types.ts, which the package's
// own types use; the module itself is only what `index.ts` calls.
declare module 'spdy-transport' {
  const transport: { connection: { create(socket: import('node:stream').Duplex, options: object): unknown } };
  export default transport;
}
