import type { Duplex } from 'node:stream';
import { checkedManifest } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import {
  type EventFilter,
  type RecordedEvent,
  type ResourceUsage,
  type SourceView,
  KubeletError,
  logText,
  eventMatches,
  type AgentView,
  type ContainerDetails,
  type ContainerLogRequest,
  type ContainerTextRequest,
  type ContainerTarget,
  type PodTarget,
  type StreamOptions,
  type StreamSession,
  type LogLine,
  type LogStream,
  type ContainerStats,
  type HealthView,
  type PlanReport,
  type PodListing,
  type PodView,
} from '@kubelet-ts/core';

/** A stand-in agent: one managed container `web-1`, and a health that tests can flip. */
export class FakeView implements AgentView {
  health_: HealthView = { healthy: true, message: 'ok' };
  async pods(): Promise<PodView[]> {
    return [
      {
        id: 'web',
        source: 'server',
        containers: [
          { name: 'nginx', image: 'nginx', state: 'running', id: 'abc', startedAt: 1_000, restartCount: 0, started: true, ready: true },
        ],
      },
    ];
  }
  /** `pods()` with their manifest, as the agent gives them, so that a `pods` that throws makes `/pods` fail too. */
  async podListing(): Promise<PodListing> {
    const manifest = checkedManifest({ version: 'v1beta1', id: 'web', containers: [{ name: 'nginx', image: 'nginx' }] });
    return { pods: (await this.pods()).map((view) => ({ view, manifest })), nodeName: 'node-1', runtime: 'fake', hostIP: '192.0.2.7' };
  }
  async containerInfo(name: string): Promise<ContainerDetails | undefined> {
    if (name !== 'web-1') return undefined;
    return { raw: { Id: 'abc', Name: '/web-1' } } as unknown as ContainerDetails;
  }
  /** False: the runtime gives no figures (501). */
  hasStats = true;
  async stats(name: string): Promise<ContainerStats | undefined> {
    if (!this.hasStats) throw new KubeletError('Unsupported', 'the fake runtime gives no container figures');
    if (name !== 'web-1' && name !== 'web/nginx') return undefined;
    return { timestamp: 1_000, cpu: { usageNanoseconds: 5_000_000 }, memory: { usageBytes: 1024, limitBytes: 4096, workingSetBytes: 512 } };
  }
  /** False: the runtime cannot read output (501). */
  hasLogs = true;
  /** What `web/nginx` printed; `web/flood` prints without end, `web/broken` loses its runtime after a line, `web/init` has not run yet. */
  readonly output = new FakeOutput();
  /** The last request `containerLogs` was asked, as the route made it. */
  logRequest: ContainerLogRequest | undefined;
  async containerLogs(request: ContainerLogRequest): Promise<AsyncIterable<LogLine>> {
    if (!this.hasLogs) throw new KubeletError('Unsupported', 'the fake runtime cannot read what containers print');
    this.logRequest = request;
    const { namespace, pod, container } = request;
    if (namespace !== 'default' || pod !== 'web')
      throw new KubeletError('NotFound', `pod "${namespace}/${pod}" does not exist on this node`);
    if (container === 'init')
      throw new KubeletError('Conflict', `container "init" in pod "default/web" is waiting to start: ContainerCreating`);
    if (container === 'flood') return this.output.flood(request.signal);
    if (container === 'broken') return this.output.broken();
    if (container !== 'nginx') throw new KubeletError('NotFound', `container "${container}" is not in pod "default/web"`);
    if (request.previous === true)
      throw new KubeletError('NotFound', 'previous terminated container "nginx" in pod "default/web" not found');
    return this.output.read(request);
  }
  /** The lines of `containerLogs` as text: a runtime without a text read of its own. */
  async containerText(request: ContainerTextRequest): Promise<AsyncIterable<Uint8Array>> {
    return logText(await this.containerLogs(request), request);
  }
  /**
   * Where exec, attach and port-forward go: a memory runtime with `web/nginx` running in a sandbox
   * whose port 8080 echoes (and `web/init`, made but never started). False `hasStreams`: 501.
   */
  readonly memory = new MemoryRuntime({ images: ['nginx'] });
  hasStreams = true;
  private made: Promise<{ nginx: string; init: string; sandbox: string }> | undefined;
  /** The memory ids of `web`'s sandbox and containers, made at the first use. */
  ids(): Promise<{ nginx: string; init: string; sandbox: string }> {
    this.made ??= (async () => {
      const sandbox = await this.memory.runSandbox({ name: 'POD--web--1', podId: 'web', hostname: 'web', ports: [], labels: {} });
      const spec = (name: string) => ({
        name,
        podId: 'web',
        image: 'nginx',
        env: {},
        ports: [{ containerPort: 8080, protocol: 'TCP' as const }],
        mounts: [],
        labels: {},
      });
      const nginx = (await this.memory.create(spec('nginx--web--1'), sandbox.id)).id;
      await this.memory.start(nginx);
      const init = (await this.memory.create(spec('init--web--1'), sandbox.id)).id;
      return { nginx, init, sandbox: sandbox.id };
    })();
    return this.made;
  }
  private async container(target: ContainerTarget): Promise<string> {
    if (!this.hasStreams) throw new KubeletError('Unsupported', 'the fake runtime cannot exec, attach or port-forward');
    if (target.namespace !== 'default' || target.pod !== 'web')
      throw new KubeletError('NotFound', `pod "${target.namespace}/${target.pod}" does not exist on this node`);
    const ids = await this.ids();
    if (target.container === 'nginx') return ids.nginx;
    if (target.container === 'init') return ids.init;
    throw new KubeletError('NotFound', `container "${target.container}" is not in pod "default/web"`);
  }
  async exec(target: ContainerTarget, command: readonly string[], options: StreamOptions): Promise<StreamSession> {
    return this.memory.streams.exec(await this.container(target), command, options);
  }
  async attach(target: ContainerTarget, options: StreamOptions): Promise<StreamSession> {
    return this.memory.streams.attach(await this.container(target), options);
  }
  /** How long a port-forward takes to connect (a runtime entering a namespace takes a while). */
  forwardDelayMs = 0;
  async portForward(target: PodTarget, port: number): Promise<Duplex> {
    await this.container({ ...target, container: 'nginx' });
    await new Promise((resolve) => setTimeout(resolve, this.forwardDelayMs));
    return this.memory.streams.portForward((await this.ids()).sandbox, port);
  }
  health(): HealthView {
    return this.health_;
  }
  async plan(): Promise<PlanReport> {
    return {
      inSync: false,
      steps: [{ podId: 'web', container: 'nginx', action: 'create', reason: 'new', image: 'nginx' }],
      held: 0,
      backOffs: [],
      unseenSources: [],
    };
  }
  async metrics() {
    return { contentType: 'text/plain; version=0.0.4; charset=utf-8', body: 'kubelet_ts_desired_pods 1\n' };
  }
  readonly nodeName = 'node-1';
  sources(): readonly SourceView[] {
    return [
      { name: 'file', seen: true, manifests: 1, lastError: 'web.yaml: containers[0].image: required' },
      { name: 'etcd', seen: false, manifests: 0, down: 'connect ECONNREFUSED 127.0.0.1:2379' },
    ];
  }
  /** What `recentEvents` answers; `record` adds one and tells the watchers. */
  readonly events: RecordedEvent[] = [];
  private readonly eventListeners = new Set<(event: RecordedEvent) => void>();
  record(event: RecordedEvent): void {
    const at = this.events.findIndex((e) => e.id === event.id);
    if (at >= 0) this.events.splice(at, 1);
    this.events.push(event);
    for (const listener of this.eventListeners) listener(event);
  }
  get eventWatchers(): number {
    return this.eventListeners.size;
  }
  recentEvents(filter: EventFilter = {}): readonly RecordedEvent[] {
    return this.events.filter((e) => eventMatches(e, filter));
  }
  watchEvents(listener: (event: RecordedEvent) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }
  private readonly changeListeners = new Set<() => void>();
  /** Says what `/pods` shows may have changed, as the agent does after a pass. */
  changed(): void {
    for (const listener of this.changeListeners) listener();
  }
  get changeWatchers(): number {
    return this.changeListeners.size;
  }
  watchChanges(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }
  /** What `resourceUsage` answers (a test sets it). */
  usage: ResourceUsage = { nodeName: 'node-1', node: undefined, pods: [] };
  resourceUsage(): ResourceUsage {
    return this.usage;
  }
  async probeMetrics() {
    return { contentType: 'text/plain; version=0.0.4; charset=utf-8', body: 'prober_probe_total{probe_type="Liveness"} 1\n' };
  }
}

/**
 * A container's output for the route's tests: lines printed by the test, a follow that waits for
 * more until `end()`, and a flood that prints 64 KiB lines for as long as it is read; `open` counts
 * the reads going on (each must end when its client leaves), `pulled` the bytes a flood gave.
 */
export class FakeOutput {
  readonly lines: LogLine[] = [];
  open = 0;
  pulled = 0;
  private ended = false;
  private readonly waiting = new Set<() => void>();

  print(stream: LogStream, text: string, time = Date.now()): void {
    this.lines.push({ stream, time, content: new TextEncoder().encode(text) });
    this.wake();
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  async *read(options: ContainerLogRequest): AsyncGenerator<LogLine> {
    this.open += 1;
    try {
      let next = options.tailLines === undefined ? 0 : Math.max(0, this.lines.length - options.tailLines);
      for (;;) {
        while (next < this.lines.length) {
          const line = this.lines[next++]!;
          if (options.sinceMs === undefined || line.time >= options.sinceMs) yield line;
        }
        if (options.follow !== true || this.ended || options.signal?.aborted === true) return;
        await new Promise<void>((resolve) => {
          const done = () => {
            this.waiting.delete(done);
            options.signal?.removeEventListener('abort', done);
            resolve();
          };
          this.waiting.add(done);
          options.signal?.addEventListener('abort', done);
        });
      }
    } finally {
      this.open -= 1;
    }
  }

  async *flood(signal: AbortSignal | undefined): AsyncGenerator<LogLine> {
    this.open += 1;
    const content = new TextEncoder().encode(`${'x'.repeat(64 * 1024 - 1)}\n`);
    try {
      while (signal?.aborted !== true) {
        this.pulled += content.length;
        yield { stream: 'stdout', time: Date.now(), content };
      }
    } finally {
      this.open -= 1;
    }
  }

  /** One line, then the runtime's connection is lost. */
  async *broken(): AsyncGenerator<LogLine> {
    yield { stream: 'stdout', time: Date.now(), content: new TextEncoder().encode('partial\n') };
    throw new KubeletError('Unavailable', 'the engine went away');
  }

  private wake(): void {
    for (const resolve of [...this.waiting]) resolve();
  }
}
