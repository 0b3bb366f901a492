import { describe, expect, it } from '@jest/globals';
import type { ContainerEvent, ContainerState } from '../src/runtime.js';
import { settledEvents } from '../src/settle-events.js';

const exited: ContainerEvent = { type: 'exited', containerId: 'a', podId: 'web', exitCode: 137, time: 1 };
const removed: ContainerEvent = { type: 'removed', containerId: 'a', podId: 'web', time: 2 };
const started: ContainerEvent = { type: 'started', containerId: 'b', podId: 'web', time: 3 };

async function* from(...events: ContainerEvent[]): AsyncGenerator<ContainerEvent> {
  for (const e of events) yield e;
}

async function collect(stream: AsyncIterable<ContainerEvent>): Promise<ContainerEvent[]> {
  const out: ContainerEvent[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

/** A list that answers `answers` in turn (the last one from then on), counting the questions. */
function listing(...answers: (ContainerState | undefined | Error)[]) {
  const asked: string[] = [];
  return {
    asked,
    listedState: async (id: string): Promise<ContainerState | undefined> => {
      const answer = answers[Math.min(asked.length, answers.length - 1)];
      asked.push(id);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
}

describe('settledEvents', () => {
  it('holds an exit until the list stops saying running, and a removal until the list no longer has it', async () => {
    const exits = listing('running', 'running', 'exited');
    expect(await collect(settledEvents(from(exited), new AbortController().signal, { ...exits, delaysMs: [1, 1, 1] }))).toEqual([exited]);
    expect(exits.asked).toEqual(['a', 'a', 'a']);

    const removals = listing('exited', undefined);
    expect(await collect(settledEvents(from(removed), new AbortController().signal, { ...removals, delaysMs: [1, 1] }))).toEqual([removed]);
    expect(removals.asked).toHaveLength(2);
  });

  it('passes a start on without asking, and keeps the order of events', async () => {
    const list = listing('exited');
    expect(await collect(settledEvents(from(started, exited, started), new AbortController().signal, list))).toEqual([
      started,
      exited,
      started,
    ]);
    expect(list.asked).toEqual(['a']);
  });

  it('passes an event on, and says why, when the list still disagrees after every delay', async () => {
    const list = listing('running');
    const unsettled: string[] = [];
    const out = await collect(
      settledEvents(from(exited), new AbortController().signal, {
        ...list,
        delaysMs: [1, 1],
        onUnsettled: (e, why) => unsettled.push(`${e.type}: ${why}`),
      }),
    );
    expect(out).toEqual([exited]);
    expect(list.asked).toHaveLength(3);
    expect(unsettled).toEqual(['exited: the list still says running']);
  });

  it('passes an event on at once when the list cannot be asked', async () => {
    const list = listing(new Error('engine gone'));
    const unsettled: string[] = [];
    const out = await collect(
      settledEvents(from(removed), new AbortController().signal, {
        ...list,
        delaysMs: [1_000],
        onUnsettled: (_e, why) => unsettled.push(why),
      }),
    );
    expect(out).toEqual([removed]);
    expect(list.asked).toHaveLength(1);
    expect(unsettled).toEqual(['the list could not be asked: engine gone']);
  });

  it('ends at once, yielding nothing more, when the signal aborts while an event is held', async () => {
    const abort = new AbortController();
    const list = listing('running');
    const startedAt = performance.now();
    setTimeout(() => abort.abort(), 20);
    const out = await collect(settledEvents(from(exited, started), abort.signal, { ...list, delaysMs: [60_000] }));
    expect(out).toEqual([]);
    expect(performance.now() - startedAt).toBeLessThan(5_000);
  });
});
