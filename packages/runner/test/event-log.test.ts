import { describe, expect, it } from '@jest/globals';
import type { KubeletEvent, RecordedEvent } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { EventLog } from '../src/event-log.js';
import { agentFixture } from './agent-fixture.js';
import { ScriptedSource, pod, settle } from './helpers.js';

const START = 1_000_000;
const event = (fields: Partial<KubeletEvent> = {}): KubeletEvent => ({
  type: 'BackOff',
  time: START,
  podId: 'web',
  container: 'app',
  message: 'back-off 10s restarting failed container',
  ...fields,
});

describe('EventLog: the recent events, bounded and folded', () => {
  const log = (maxEvents = 100, maxAgeMs = 60_000) => {
    const clock = new ManualClock(START);
    const pods: Record<string, { namespace: string; uid: string }> = { web: { namespace: 'shop', uid: 'u-web' } };
    return { clock, log: new EventLog({ clock, maxEvents, maxAgeMs, podOf: (id) => pods[id] }) };
  };

  it('folds identical events into one with a count and the first and last time, moved to the end', () => {
    const { log: l } = log();
    l.emit(event());
    l.emit(event({ type: 'ContainerStarted', message: 'started' }));
    l.emit(event({ time: START + 10_000 }));
    expect(l.list().map((e) => [e.type, e.count, e.firstTime, e.time])).toEqual([
      ['ContainerStarted', 1, START, START],
      ['BackOff', 2, START, START + 10_000],
    ]);
    // A different message is another event.
    l.emit(event({ message: 'back-off 20s restarting failed container' }));
    expect(l.list()).toHaveLength(3);
  });

  it("files an event under its pod's namespace and uid; filters by namespace and pod", () => {
    const { log: l } = log();
    l.emit(event());
    l.emit(event({ podId: 'gone', type: 'ManifestRejected', message: 'containers[0].image: required' }));
    l.emit({ type: 'SourceError', time: START, source: 'file', message: 'unreadable' });
    expect(l.list()[0]).toMatchObject({ namespace: 'shop', podUid: 'u-web', id: 1 });
    expect(l.list({ namespace: 'shop' }).map((e) => e.podId)).toEqual(['web']);
    // A pod the agent does not know is taken as the default namespace's, and so is an event of no pod (the node's).
    expect(l.list({ namespace: 'default' }).map((e) => e.type)).toEqual(['ManifestRejected', 'SourceError']);
    expect(l.list({ pod: 'web' })).toHaveLength(1);
    expect(l.list()).toHaveLength(3);
  });

  it('keeps at most maxEvents, and none older than maxAgeMs since it last happened', async () => {
    const { clock, log: l } = log(3, 60_000);
    for (let i = 0; i < 5; i++) l.emit(event({ message: `m${i}` }));
    expect(l.list().map((e) => e.message)).toEqual(['m2', 'm3', 'm4']);
    await clock.advance(30_000);
    l.emit(event({ message: 'm3', time: START + 30_000 }));
    await clock.advance(40_000);
    // m2 and m4 last happened 70 s ago; m3 30 s later.
    expect(l.list().map((e) => e.message)).toEqual(['m3']);
  });

  it('tells listeners of every new or folded event until they stop listening; a listener that throws harms no one', () => {
    const { log: l } = log();
    const heard: RecordedEvent[] = [];
    l.subscribe(() => {
      throw new Error('gone');
    });
    const stop = l.subscribe((e) => heard.push(e));
    l.emit(event());
    l.emit(event());
    stop();
    l.emit(event({ message: 'after' }));
    expect(heard.map((e) => e.count)).toEqual([1, 2]);
  });
});

describe('the agent keeps its recent events', () => {
  const f = agentFixture();

  it('records what it did to a pod under its namespace, and lets a watcher hear it', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [{ ...pod('web'), namespace: 'shop' }] })]);
    const heard: string[] = [];
    const stop = k.watchEvents((e) => heard.push(e.type));
    await k.start();
    await settle();
    stop();
    const started = k.recentEvents({ namespace: 'shop', pod: 'web' }).find((e) => e.type === 'ContainerStarted');
    expect(started).toMatchObject({ container: 'web', count: 1, namespace: 'shop', podUid: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(heard).toContain('ContainerStarted');
    expect(k.recentEvents({ namespace: 'default' }).filter((e) => e.podId !== undefined)).toEqual([]);
  });
});
