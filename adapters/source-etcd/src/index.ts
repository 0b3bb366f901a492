export * from './etcd-source.js';
export * from './etcd-event-sink.js';
