import { podNameOf } from '@kubelet-ts/core';
import { Counter, Histogram, Registry } from 'prom-client';
import type { ProbeKind, ProbeTarget } from './prober.js';

/** The kubelet's names of a probe's outcome: `unknown` when it could not be run. */
export type ProbeResult = 'successful' | 'failed' | 'unknown';

const PROBE_TYPE: Readonly<Record<ProbeKind, string>> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

/**
 * What the kubelet serves at `/metrics/probes`: every probe run counted by its result, and how
 * long it took, labelled with the container, pod, namespace (and uid) as the kubelet labels them.
 */
export class ProbeMetrics {
  readonly registry = new Registry();
  private readonly total = new Counter({
    name: 'prober_probe_total',
    help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
    labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'prober_probe_duration_seconds',
    help: 'Duration in seconds for a probe response.',
    labelNames: ['probe_type', 'container', 'pod', 'namespace'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  record(target: ProbeTarget, kind: ProbeKind, result: ProbeResult, seconds: number): void {
    const where = {
      probe_type: PROBE_TYPE[kind],
      container: target.container,
      pod: podNameOf(target.podId, target.namespace),
      namespace: target.namespace ?? 'default',
    };
    this.total.inc({ ...where, result, pod_uid: target.podUid ?? '' });
    this.duration.observe(where, seconds);
  }

  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
