import {
  isKubeletError,
  wrapRuntime,
  type ContainerRuntime,
  type ContainerSummary,
  type EventSink,
  type KubeletEvent,
} from '@kubelet-ts/core';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The agent's Prometheus metrics, in a registry of its own (several agents may share a process).
 * Names follow Prometheus conventions with the `kubelet_ts_` prefix.
 */
export class KubeletMetrics {
  readonly registry = new Registry();
  readonly passDuration = new Histogram({
    name: 'kubelet_ts_sync_pass_duration_seconds',
    help: 'Duration of a sync pass, from planning to the end of the work it dispatched.',
    buckets: [0.001, 0.005, 0.02, 0.1, 0.5, 1, 5, 30, 120],
    registers: [this.registry],
  });
  readonly runtimeCalls = new Histogram({
    name: 'kubelet_ts_runtime_call_duration_seconds',
    help: 'Duration of container runtime calls, by operation.',
    labelNames: ['operation'],
    buckets: [0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 60],
    registers: [this.registry],
  });
  readonly runtimeErrors = new Counter({
    name: 'kubelet_ts_runtime_call_errors_total',
    help: 'Failed container runtime calls, by operation and error code.',
    labelNames: ['operation', 'code'],
    registers: [this.registry],
  });
  readonly sourceUpdates = new Counter({
    name: 'kubelet_ts_source_updates_total',
    help: 'Complete sets delivered by each manifest source.',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly sourceErrors = new Counter({
    name: 'kubelet_ts_source_errors_total',
    help: 'Errors reported by each manifest source (rejected manifests included).',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly containers: Gauge<'state'>;
  readonly restarts = new Counter({
    name: 'kubelet_ts_container_restarts_total',
    help: 'Containers restarted under their restart policy.',
    registers: [this.registry],
  });
  readonly runtimeEvents = new Counter({
    name: 'kubelet_ts_runtime_events_total',
    help: 'Container events received from the runtime, by type.',
    labelNames: ['type'],
    registers: [this.registry],
  });
  readonly eventStreamReconnects = new Counter({
    name: 'kubelet_ts_runtime_event_stream_reconnects_total',
    help: 'Times the runtime event stream ended or failed and was reconnected.',
    registers: [this.registry],
  });
  readonly startConcurrency = new Gauge({
    name: 'kubelet_ts_start_concurrency',
    help: 'Pods that may pull, create and start containers at once: the current limit.',
    registers: [this.registry],
  });
  readonly desiredPods = new Gauge({
    name: 'kubelet_ts_desired_pods',
    help: 'Pods the union of all sources asks for.',
    registers: [this.registry],
  });

  /** `ours` lists the containers the agent manages on this node; it is asked at each scrape. */
  constructor(ours: () => Promise<readonly ContainerSummary[]>) {
    this.containers = new Gauge({
      name: 'kubelet_ts_containers',
      help: 'Containers the agent manages on this node, by state, when scraped.',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const counts = { created: 0, running: 0, exited: 0 };
        for (const c of await ours()) counts[c.state] += 1;
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      },
    });
  }

  /** Counts what the events say (restarts), then passes them on. */
  events(next: EventSink): EventSink {
    return {
      emit: (event: KubeletEvent) => {
        if (event.type === 'ContainerRestarted') this.restarts.inc();
        next.emit(event);
      },
    };
  }

  /** The runtime with every call timed and every failure counted; it keeps every power of `runtime`. */
  instrument(runtime: ContainerRuntime): ContainerRuntime {
    return wrapRuntime(runtime, {
      around: (operation, _args, call) => {
        const end = this.runtimeCalls.startTimer({ operation });
        return call().then(
          (value) => {
            end();
            return value;
          },
          (error: unknown) => {
            end();
            this.runtimeErrors.inc({ operation, code: isKubeletError(error) ? error.code : 'Internal' });
            throw error;
          },
        );
      },
    });
  }

  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
