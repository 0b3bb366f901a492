import type { EventSink, KubeletEvent, Logger } from '@kubelet-ts/core';

const WARNINGS = new Set<KubeletEvent['type']>([
  'ContainerFailed',
  'ImagePullFailed',
  'ManifestRejected',
  'ManifestConflict',
  'SourceError',
  'SourceRestarted',
  'DeprecatedField',
]);

/** Writes each event as one structured log line, carrying manifest id and container name. */
export class LogEventSink implements EventSink {
  constructor(private readonly logger: Logger) {}

  emit(event: KubeletEvent): void {
    const { message, time: _time, type, ...fields } = event;
    const level = WARNINGS.has(event.type) ? 'warn' : 'info';
    this.logger[level]({ event: type, ...fields }, message);
  }
}

/** Sends each event to several sinks (the log and, say, etcd). */
export class FanOutEventSink implements EventSink {
  constructor(private readonly sinks: readonly EventSink[]) {}

  emit(event: KubeletEvent): void {
    for (const sink of this.sinks) sink.emit(event);
  }
}
