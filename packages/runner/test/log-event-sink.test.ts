import { describe, expect, it } from '@jest/globals';
import type { EventSink, KubeletEvent, KubeletEventType } from '@kubelet-ts/core';
import { FanOutEventSink, LogEventSink } from '../src/log-event-sink.js';
import { RecordingEventSink, RecordingLogger } from './helpers.js';

const event = (type: KubeletEventType, extra: Partial<KubeletEvent> = {}): KubeletEvent => ({
  type,
  time: 1_700_000_000_000,
  podId: 'web',
  container: 'nginx',
  reason: 'new',
  message: `${type} happened`,
  ...extra,
});

describe('LogEventSink', () => {
  const failures: KubeletEventType[] = [
    'ContainerFailed',
    'ImagePullFailed',
    'ManifestRejected',
    'ManifestConflict',
    'SourceError',
    'SourceRestarted',
  ];
  const others: KubeletEventType[] = ['ContainerCreated', 'ContainerStarted', 'ContainerStopped', 'ContainerRemoved', 'ImagePulled'];

  it.each(failures)('logs %s as a warning', (type) => {
    const logger = new RecordingLogger();
    new LogEventSink(logger).emit(event(type));
    expect(logger.entries).toEqual([
      { level: 'warn', fields: { event: type, podId: 'web', container: 'nginx', reason: 'new' }, message: `${type} happened` },
    ]);
  });

  it.each(others)('logs %s as info', (type) => {
    const logger = new RecordingLogger();
    new LogEventSink(logger).emit(event(type));
    expect(logger.entries).toEqual([
      { level: 'info', fields: { event: type, podId: 'web', container: 'nginx', reason: 'new' }, message: `${type} happened` },
    ]);
  });

  it('carries the source and leaves out fields the event does not have', () => {
    const logger = new RecordingLogger();
    new LogEventSink(logger).emit({
      type: 'SourceRestarted',
      time: 1,
      source: 'etcd',
      reason: 'Unavailable',
      message: 'restarting in 1000 ms',
    });
    expect(logger.entries).toEqual([
      { level: 'warn', fields: { event: 'SourceRestarted', source: 'etcd', reason: 'Unavailable' }, message: 'restarting in 1000 ms' },
    ]);
  });

  it('keeps the message and the time out of the fields', () => {
    const logger = new RecordingLogger();
    new LogEventSink(logger).emit(event('ContainerStarted'));
    const fields = logger.entries[0]?.fields ?? {};
    expect(fields).not.toHaveProperty('time');
    expect(fields).not.toHaveProperty('type');
    expect(fields).not.toHaveProperty('message');
  });
});

describe('FanOutEventSink', () => {
  it('gives every event to every sink, in order', () => {
    const a = new RecordingEventSink();
    const b = new RecordingEventSink();
    const sink: EventSink = new FanOutEventSink([a, b]);
    const first = event('ContainerCreated');
    const second = event('ContainerStarted');
    sink.emit(first);
    sink.emit(second);
    expect(a.events).toEqual([first, second]);
    expect(b.events).toEqual([first, second]);
  });
});
