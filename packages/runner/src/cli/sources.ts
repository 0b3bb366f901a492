import type { EventSink, Logger, ManifestSource } from '@kubelet-ts/core';
import { EtcdEventSink, EtcdManifestSource } from '@kubelet-ts/source-etcd';
import { FileManifestSource } from '@kubelet-ts/source-file';
import { HttpManifestSource, parseHeaderFlag } from '@kubelet-ts/source-http';
import { ServerManifestSource } from '@kubelet-ts/source-server';
import type { CliOptions } from './options.js';

export interface CliSources {
  /** In priority order: file, url, etcd, server (the earlier wins a manifest id given twice). */
  readonly sources: ManifestSource[];
  /** Absent in plan mode. */
  readonly server?: ServerManifestSource;
  /** Extra event sinks (etcd) and how to close them. */
  readonly eventSinks: EventSink[];
  close(): Promise<void>;
}

/** The four sources of the 2014 agent, from the command line. */
export function buildSources(options: CliOptions, hostname: string, logger: Logger, mode: 'agent' | 'plan' = 'agent'): CliSources {
  const sources: ManifestSource[] = [];
  const closers: Array<() => Promise<void>> = [];
  if (options.config !== undefined) sources.push(new FileManifestSource({ path: options.config, checkFrequencyMs: options.fileCheckFrequency }));
  if (options.manifestUrl !== undefined) {
    sources.push(
      new HttpManifestSource({
        url: options.manifestUrl,
        checkFrequencyMs: options.httpCheckFrequency,
        timeoutMs: options.manifestUrlTimeout,
        headers: Object.fromEntries(options.manifestUrlHeader.map(parseHeaderFlag)),
      }),
    );
  }
  const eventSinks: EventSink[] = [];
  if (options.etcdServers !== undefined) {
    sources.push(new EtcdManifestSource({ endpoints: [...options.etcdServers], hostname, logger }));
  }
  if (options.etcdServers !== undefined && mode === 'agent') {
    const sink = new EtcdEventSink({ endpoints: [...options.etcdServers], logger });
    eventSinks.push(sink);
    closers.push(() => sink.close());
  }
  // A plan reads the sources once; the server's set lives in the running agent (GET /plan there).
  const server =
    mode === 'plan'
      ? undefined
      : new ServerManifestSource({
          address: options.address,
          port: options.port,
          ...(options.authToken === undefined ? {} : { authToken: options.authToken }),
          logger,
        });
  if (server !== undefined) sources.push(server);
  return {
    sources,
    ...(server === undefined ? {} : { server }),
    eventSinks,
    close: async () => {
      await Promise.all(closers.map((c) => c()));
    },
  };
}
