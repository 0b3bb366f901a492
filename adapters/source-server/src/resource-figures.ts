import type {
  ContainerUsage,
  CpuUsage,
  FsStats,
  InterfaceStats,
  MemoryStats,
  NodeUsage,
  PodUsage,
  ResourceUsage,
  VolumeUsage,
} from '@kubelet-ts/core';

/** Prometheus text exposition, version 0.0.4 (what the kubelet's `/metrics/resource` answers with). */
export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Readonly<Record<string, string>>;

/** A label value as the exposition format writes it (`\`, `"` and newlines escaped). */
const escaped = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

class Exposition {
  private readonly lines: string[] = [];

  family(name: string, type: 'counter' | 'gauge', help: string, samples: ReadonlyArray<readonly [Labels, number, number?]>): void {
    this.lines.push(`# HELP ${name} [STABLE] ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value, timestampMs] of samples) {
      const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escaped(v)}"`);
      this.lines.push(
        `${name}${pairs.length === 0 ? '' : `{${pairs.join(',')}}`} ${value}${timestampMs === undefined ? '' : ` ${timestampMs}`}`,
      );
    }
  }

  text(): string {
    return `${this.lines.join('\n')}\n`;
  }
}

/**
 * The kubelet's `/metrics/resource` (what metrics-server scrapes): cumulative CPU seconds and the
 * working set of the node, each pod and each container, the containers' start times, every sample
 * with the time it was taken (ms), and `resource_scrape_error` 1 when the last housekeeping pass
 * could not read the runtime's figures. A family with no samples keeps its HELP and TYPE lines.
 */
export function renderResourceMetrics(usage: ResourceUsage): string {
  const out = new Exposition();
  const { node, pods } = usage;
  const containers = pods.flatMap((pod) =>
    pod.containers.map((c) => [{ container: c.name, namespace: pod.namespace, pod: pod.name }, c] as const),
  );
  const podLabels = (pod: PodUsage) => ({ namespace: pod.namespace, pod: pod.name });
  out.family(
    'container_cpu_usage_seconds_total',
    'counter',
    'Cumulative cpu time consumed by the container in core-seconds',
    containers.map(([labels, c]) => [labels, seconds(c.cpu.usageNanoseconds), c.timestamp]),
  );
  out.family(
    'container_memory_working_set_bytes',
    'gauge',
    'Current working set of the container in bytes',
    containers.map(([labels, c]) => [labels, c.memory.workingSetBytes, c.timestamp]),
  );
  out.family(
    'container_start_time_seconds',
    'gauge',
    'Start time of the container since unix epoch in seconds',
    containers.map(([labels, c]) => [labels, c.startTime / 1000, c.startTime]),
  );
  const nodeSample = (value: (n: NodeUsage) => number) => (node === undefined ? [] : [[{}, value(node), node.timestamp] as const]);
  out.family(
    'node_cpu_usage_seconds_total',
    'counter',
    'Cumulative cpu time consumed by the node in core-seconds',
    nodeSample((n) => seconds(n.cpu.usageNanoseconds)),
  );
  out.family(
    'node_memory_working_set_bytes',
    'gauge',
    'Current working set of the node in bytes',
    nodeSample((n) => n.memory.workingSetBytes),
  );
  out.family(
    'pod_cpu_usage_seconds_total',
    'counter',
    'Cumulative cpu time consumed by the pod in core-seconds',
    pods.map((p) => [podLabels(p), seconds(p.cpu.usageNanoseconds), p.timestamp]),
  );
  out.family(
    'pod_memory_working_set_bytes',
    'gauge',
    'Current working set of the pod in bytes',
    pods.map((p) => [podLabels(p), p.memory.workingSetBytes, p.timestamp]),
  );
  out.family('resource_scrape_error', 'gauge', '1 if there was an error while getting container metrics, 0 otherwise', [
    [{}, usage.error === undefined ? 0 : 1],
  ]);
  return out.text();
}

const seconds = (nanoseconds: number) => nanoseconds / 1e9;

/** A time as the Summary API writes one (metav1.Time: RFC 3339, whole seconds, UTC). */
const time = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

function cpu(figures: CpuUsage, at: number) {
  return {
    time: time(at),
    ...(figures.usageNanoCores === undefined ? {} : { usageNanoCores: figures.usageNanoCores }),
    usageCoreNanoSeconds: figures.usageNanoseconds,
  };
}

function memory(figures: MemoryStats & { readonly availableBytes?: number }, at: number) {
  const available =
    figures.availableBytes ?? (figures.limitBytes === undefined ? undefined : Math.max(0, figures.limitBytes - figures.workingSetBytes));
  return {
    time: time(at),
    ...(available === undefined ? {} : { availableBytes: available }),
    usageBytes: figures.usageBytes,
    workingSetBytes: figures.workingSetBytes,
    ...(figures.rssBytes === undefined ? {} : { rssBytes: figures.rssBytes }),
    ...(figures.pageFaults === undefined ? {} : { pageFaults: figures.pageFaults }),
    ...(figures.majorPageFaults === undefined ? {} : { majorPageFaults: figures.majorPageFaults }),
  };
}

function fs(figures: FsStats) {
  const { timestamp, ...rest } = figures;
  return { time: time(timestamp), ...rest };
}

function network(interfaces: readonly InterfaceStats[], at: number) {
  const main = interfaces.find((i) => i.name === 'eth0') ?? interfaces[0];
  return { time: time(at), ...(main ?? {}), interfaces };
}

/** The kubelet's `VolumeStats`: the file system's figures, the volume's name, and its claim as `pvcRef`. */
function volume(v: VolumeUsage) {
  const { name, claim, ...figures } = v;
  return { ...fs(figures), name, ...(claim === undefined ? {} : { pvcRef: claim }) };
}

function container(c: ContainerUsage) {
  return {
    name: c.name,
    startTime: time(c.startTime),
    cpu: cpu(c.cpu, c.timestamp),
    memory: memory(c.memory, c.timestamp),
    ...(c.writableLayerBytes === undefined ? {} : { rootfs: { time: time(c.timestamp), usedBytes: c.writableLayerBytes } }),
  };
}

/**
 * The kubelet's Summary API (`GET /stats/summary`, stats/v1alpha1): the node and each pod with
 * running containers, in the kubelet's field names and units, from the last housekeeping pass.
 */
export function renderSummary(usage: ResourceUsage) {
  const { nodeName, node, pods } = usage;
  return {
    node: {
      nodeName,
      ...(node === undefined
        ? {}
        : {
            startTime: time(node.startTime),
            cpu: cpu(node.cpu, node.timestamp),
            memory: memory(node.memory, node.timestamp),
            network: network(node.network, node.timestamp),
            ...(node.fs === undefined ? {} : { fs: fs(node.fs) }),
            ...(node.imageFs === undefined ? {} : { runtime: { imageFs: fs(node.imageFs) } }),
            ...(node.rlimit === undefined ? {} : { rlimit: { time: time(node.timestamp), ...node.rlimit } }),
          }),
    },
    pods: pods.map((pod) => {
      const layers = pod.containers.flatMap((c) => (c.writableLayerBytes === undefined ? [] : [c.writableLayerBytes]));
      return {
        podRef: { name: pod.name, namespace: pod.namespace, uid: pod.uid },
        startTime: time(pod.startTime),
        containers: pod.containers.map(container),
        cpu: cpu(pod.cpu, pod.timestamp),
        memory: memory(pod.memory, pod.timestamp),
        ...(pod.network === undefined ? {} : { network: network([pod.network], pod.timestamp) }),
        ...(layers.length === 0
          ? {}
          : { 'ephemeral-storage': { time: time(pod.timestamp), usedBytes: layers.reduce((a, b) => a + b, 0) } }),
        ...(pod.volumes === undefined || pod.volumes.length === 0 ? {} : { volume: pod.volumes.map(volume) }),
      };
    }),
  };
}
