export { EtcdManifestSource, etcdKeyFor, registerEtcdSource, type EtcdManifestSourceOptions } from './etcd-source.js';
export { EtcdEventSink, registerEtcdEventSink, type EtcdEventSinkOptions } from './etcd-event-sink.js';
export type { EtcdAuthOptions, EtcdTlsOptions } from './etcd-client.js';
