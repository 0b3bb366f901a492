import { describe, expect, it } from '@jest/globals';
import { agentFixture, SYNC_MS } from './agent-fixture.js';
import { pod, settle, ScriptedSource } from './helpers.js';

/**
 * Issue 27 (idle cost): while the runtime's event stream flows, the periodic pass plans from the
 * pod cache and lists the host only every `eventedRelistMs` (the kubelet's evented PLEG, 300 s).
 */
describe('the evented relist', () => {
  const f = agentFixture();
  const hostLists = () => f.runtime.calls.filter((c) => c.op === 'list' && c.target === undefined).length;
  /** Runs the periodic passes of `ms` of virtual time, one sync period at a time. */
  const idleFor = async (ms: number) => {
    for (let t = 0; t < ms; t += SYNC_MS) {
      await f.clock.advance(SYNC_MS);
      await settle();
    }
  };

  it('lists the host once per 300 s while events flow, not once per sync period', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web'), pod('db')] })]);
    await k.start();
    await settle();
    await k.sync();
    const from = hostLists();
    const passes = k.status().passes;
    await idleFor(290_000);
    expect(k.status().passes - passes).toBeGreaterThanOrEqual(29);
    expect(hostLists() - from).toBe(0);
    await idleFor(20_000);
    expect(hostLists() - from).toBe(1);
    expect(k.health()).toMatchObject({ healthy: true });
  });

  it('still replaces a crashed container at once (the event lists its pod), and a cached pass that finds work lists first', async () => {
    const source = new ScriptedSource('a', { initial: [pod('web')] });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    const from = hostLists();
    f.runtime.exit(f.one('web').id, 1);
    await settle();
    await k.sync();
    expect(f.of('web').filter((c) => c.state === 'running')).toHaveLength(1);
    expect(hostLists() - from).toBe(1); // sync() looks at the host as it is
    // A new manifest: the pass it asks for sees work in the cache, lists the host, then acts on that.
    source.push([pod('web'), pod('db')]);
    await settle(30);
    expect(f.of('db').filter((c) => c.state === 'running')).toHaveLength(1);
    expect(hostLists() - from).toBe(2);
  });

  it('lists on every pass while the stream is broken, and until a relist after it reconnected', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })]);
    await k.start();
    await settle();
    await k.sync();
    f.runtime.breakEvents();
    await settle();
    // Broken: every pass lists, as without events.
    for (let i = 0; i < 3; i++) {
      const before = hostLists();
      await k.sync();
      expect(hostLists() - before).toBe(1);
    }
    // The watch reconnects after 100 ms; the pass it asks for lists (events were missed meanwhile),
    // and from then on the cache is kept by the new stream.
    const before = hostLists();
    await f.clock.advance(100);
    await settle();
    expect(hostLists() - before).toBe(1);
    await idleFor(5 * SYNC_MS);
    expect(hostLists() - before).toBe(1);
  });

  it('lists on every pass with eventedRelistMs 0', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { eventedRelistMs: 0 });
    await k.start();
    await settle();
    await k.sync();
    const from = hostLists();
    await idleFor(5 * SYNC_MS);
    expect(hostLists() - from).toBe(5);
  });
});
