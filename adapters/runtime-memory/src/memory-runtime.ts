import { createHash } from 'node:crypto';
import {
  KubeletError,
  runAsNonRootProblem,
  Labels,
  Tokens,
  sleep,
  systemClock,
  type Clock,
  type ContainerDetails,
  type ContainerEvent,
  type ContainerEventSource,
  type ContainerLogSource,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerSummary,
  type ExecResult,
  type ListOptions,
  type LogLine,
  type LogReadOptions,
  type LogStream,
  type RuntimeCapabilities,
  type Registry,
  type SandboxSpec,
  type SandboxSummary,
} from '@kubelet-ts/core';
import { CallLog } from './call-log.js';
import { MemoryEvents } from './memory-events.js';
import { MemoryFigures, type MemoryUse } from './memory-figures.js';
import { MemoryImages } from './memory-images.js';
import { MemoryLogs } from './memory-logs.js';
import { MemoryStreams } from './memory-streams.js';
import { portClash, readySandbox } from './port-clash.js';

export type { Fault, Latency, RuntimeCall, RuntimeOperation } from './call-log.js';

/** What a command run in a memory container does: its exit code and output. Default: exit 0. */
export type ExecHandler = (container: ContainerSummary, command: readonly string[]) => ExecResult;

/** What `MemoryRuntime` simulates: its clock, its images, what it can pull and how slowly, which images need credentials, and how many calls it logs. */
export interface MemoryRuntimeOptions {
  readonly clock?: Clock;
  /** Images present from the start. */
  readonly images?: readonly string[];
  /**
   * Which images `images.pull` can fetch: `'any'` (default) or a list. Anything else is
   * `NotFound`, as an engine with no registry would answer.
   */
  readonly pullable?: 'any' | readonly string[];
  /** Milliseconds each pull takes on the clock. Default 0. */
  readonly pullLatencyMs?: number;
  /**
   * Images of a private registry, by name, with the one user name and password that may pull
   * each: a pull without credentials, or with others, is refused `NotFound` with the registry's
   * words (`unauthorized: authentication required`), as the engines refuse it. Default none.
   */
  readonly privateImages?: Readonly<Record<string, { readonly username: string; readonly password: string }>>;
  /** How many calls `calls` keeps (the oldest go first); `callCount` counts them all. Default 10,000. */
  readonly callLogSize?: number;
}

interface Record_ {
  summary: Mutable<ContainerSummary>;
  readonly spec: ContainerSpec;
  /** The sandbox whose namespace (and ports) the container shares. */
  readonly sandbox: string;
  /** Set by `hangOnStop`: the container ignores the stop signal and is killed at the timeout. */
  ignoresStop: boolean;
  /** Set by `onExec`: what commands run in this container do. */
  exec?: ExecHandler;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const ADAPTER = 'memory';

interface SandboxRecord {
  summary: SandboxSummary;
  readonly spec: SandboxSpec;
}

/**
 * A complete `ContainerRuntime` held in memory: for embedding the agent where no engine exists,
 * and for fast, deterministic tests of everything above the runtime. Containers can be made to
 * exit, crash or print, sandboxes to die, every call is logged, and faults and latency can be injected
 * per operation. Pods are modelled as on a real engine: the containers of a sandbox share its
 * ports (published once, by the sandbox), and removing a sandbox removes its containers.
 */
export class MemoryRuntime extends CallLog implements ContainerRuntime, ContainerEventSource, ContainerLogSource {
  readonly name = ADAPTER;
  /** Events, figures and output, as the real engines have (the figures are what `setStats` says, the output what `print` does). */
  readonly capabilities: RuntimeCapabilities;
  /** Its figures (`capabilities.stats`): what tests set with `setStats` and `figures.setNetwork`. */
  readonly figures: MemoryFigures;
  /** Its exec, attach and port-forward (`capabilities.streaming`): programs and ports tests can add. */
  readonly streams: MemoryStreams;
  /** Its images: `pull` and `hasImage` are logged, delayed and faulted like every other call. */
  readonly images: MemoryImages;

  private readonly containers = new Map<string, Record_>();
  private readonly sandboxes = new Map<string, SandboxRecord>();
  /** Container names in use, so that create's name check does not scan every container. */
  private readonly names = new Map<string, string>();
  private readonly imageRefs = new Map<string, string>();
  private readonly execLatency = new Map<string, number>();
  private nextId = 1;
  private readonly changes = new MemoryEvents(ADAPTER);
  private readonly output = new MemoryLogs();

  constructor(options: MemoryRuntimeOptions = {}) {
    super(options.clock ?? systemClock, options.callLogSize ?? 10_000);
    this.streams = new MemoryStreams({ container: (id) => this.get(id), sandboxes: this.sandboxes, containers: this.containers });
    this.figures = new MemoryFigures({
      clock: this.clock,
      enter: (op, target) => this.enter(op, target),
      limitOf: (id) => this.get(id).spec.memory,
      hasContainer: (id) => this.containers.has(id),
      sandbox: (id) => {
        const s = this.sandboxes.get(id);
        return s === undefined ? undefined : { hostNetwork: s.spec.hostNetwork === true };
      },
    });
    this.capabilities = { events: this, stats: this.figures, logs: this, streaming: this.streams };
    this.images = new MemoryImages({ ...options, clock: this.clock, enter: (op, target) => this.enter(op, target), adapter: ADAPTER });
  }

  // ---- the contract: pods --------------------------------------------------------------------

  async runSandbox(spec: SandboxSpec): Promise<SandboxSummary> {
    await this.enter('runSandbox', spec.name);
    const holder = this.names.get(spec.name);
    if (holder !== undefined)
      throw new KubeletError('Conflict', `sandbox name ${spec.name} is already in use by ${holder}`, { adapter: ADAPTER });
    const clash = portClash(spec.ports, this.sandboxes.values());
    if (clash !== undefined)
      throw new KubeletError('Conflict', `cannot run sandbox ${spec.name}: host port ${clash} is already allocated`, { adapter: ADAPTER });
    const id = this.newId();
    const summary = readySandbox(id, spec, this.clock.now());
    this.sandboxes.set(id, { summary, spec });
    this.names.set(spec.name, id);
    return summary;
  }

  async listSandboxes(options: ListOptions = {}): Promise<SandboxSummary[]> {
    // A pod's list is logged with the pod as its target; a list of the whole host has none.
    await this.enter('listSandboxes', options.podId);
    const out: SandboxSummary[] = [];
    for (const s of this.sandboxes.values()) {
      const pod = s.spec.labels[Labels.sandbox];
      if (options.podId === undefined ? options.includeForeign === true || pod !== undefined : pod === options.podId) out.push(s.summary);
    }
    return out;
  }

  async stopSandbox(id: string): Promise<void> {
    await this.enter('stopSandbox', id);
    if (!this.sandboxes.has(id)) throw new KubeletError('NotFound', `no such sandbox: ${id}`, { adapter: ADAPTER });
    this.killSandbox(id);
  }

  async removeSandbox(id: string, _options?: { readonly volumes?: boolean }): Promise<void> {
    await this.enter('removeSandbox', id);
    const s = this.sandboxes.get(id);
    if (s === undefined) return;
    for (const [cid, r] of this.containers) {
      if (r.sandbox !== id) continue;
      this.containers.delete(cid);
      this.figures.forget(cid);
      this.names.delete(r.summary.name);
      this.output.forget(cid);
      this.changes.emit('removed', cid, r.spec.labels, this.clock.now());
    }
    this.sandboxes.delete(id);
    this.figures.forget(id);
    this.names.delete(s.summary.name);
  }

  // ---- the contract: containers --------------------------------------------------------------

  async list(options: ListOptions = {}): Promise<ContainerSummary[]> {
    await this.enter('list', options.podId);
    const out: ContainerSummary[] = [];
    for (const r of this.containers.values()) {
      const pod = r.spec.labels[Labels.manifestId];
      // Summaries are replaced, never changed in place, so handing out the object itself is safe.
      if (options.podId === undefined ? options.includeForeign === true || pod !== undefined : pod === options.podId) out.push(r.summary);
    }
    return out;
  }

  async inspect(id: string): Promise<ContainerDetails> {
    await this.enter('inspect', id);
    const r = this.get(id);
    return { ...r.summary, spec: r.spec, raw: { Id: r.summary.id, Name: r.summary.name, State: { ...r.summary }, Config: r.spec } };
  }

  async create(spec: ContainerSpec, sandboxId: string): Promise<ContainerSummary> {
    await this.enter('create', spec.name);
    const holder = this.names.get(spec.name);
    if (holder !== undefined)
      throw new KubeletError('Conflict', `container name ${spec.name} is already in use by ${holder}`, { adapter: ADAPTER });
    if (!this.images.has(spec.image)) throw new KubeletError('NotFound', `no such image: ${spec.image}`, { adapter: ADAPTER });
    if (!this.sandboxes.has(sandboxId)) throw new KubeletError('NotFound', `no such sandbox: ${sandboxId}`, { adapter: ADAPTER });
    const nonRoot = runAsNonRootProblem(spec.security, this.images.userOf(spec.image));
    if (nonRoot !== undefined) throw new KubeletError('InvalidManifest', `create ${spec.name}: ${nonRoot}`, { adapter: ADAPTER });
    const id = this.newId();
    const summary: Mutable<ContainerSummary> = {
      id,
      name: spec.name,
      image: spec.image,
      imageRef: this.imageRefOf(spec.image),
      labels: { ...spec.labels },
      state: 'created',
      createdAt: this.clock.now(),
    };
    this.containers.set(id, { summary, spec, sandbox: sandboxId, ignoresStop: false });
    this.names.set(spec.name, id);
    return { ...summary };
  }

  /**
   * As an engine names the image a container ran: the digest of its content, here of its name.
   * One string per image, shared by its containers (10,000 of them keep one, not 10,000).
   */
  private imageRefOf(image: string): string {
    let ref = this.imageRefs.get(image);
    if (ref === undefined) {
      ref = `sha256:${createHash('sha256').update(image).digest('hex')}`;
      this.imageRefs.set(image, ref);
    }
    return ref;
  }

  async start(id: string): Promise<void> {
    await this.enter('start', id);
    const r = this.get(id);
    if (r.summary.state === 'running') return;
    // Its ports are the sandbox's, published when the sandbox was made: nothing to allocate here.
    if (this.sandboxes.get(r.sandbox)?.summary.state !== 'ready') {
      throw new KubeletError('Conflict', `cannot start ${r.summary.name}: its sandbox ${r.sandbox} is not ready`, { adapter: ADAPTER });
    }
    // A new object without the last run's end (not `delete`, which would slow every reader).
    const { finishedAt: _finished, exitCode: _code, ...rest } = r.summary;
    r.summary = { ...rest, state: 'running', startedAt: this.clock.now() };
    this.changes.emit('started', id, r.spec.labels, this.clock.now());
  }

  async stop(id: string, timeoutSeconds: number): Promise<void> {
    await this.enter('stop', id);
    const r = this.get(id);
    if (r.summary.state !== 'running') return;
    if (r.ignoresStop) {
      await sleep(this.clock, timeoutSeconds * 1000);
      if (r.summary.state === 'running') this.finish(r, 137);
      return;
    }
    this.finish(r, 0);
  }

  async remove(id: string, options: { readonly force?: boolean } = {}): Promise<void> {
    await this.enter('remove', id);
    const r = this.containers.get(id);
    if (r === undefined) return;
    if (r.summary.state === 'running' && options.force !== true) {
      throw new KubeletError('Conflict', `cannot remove running container ${r.summary.name}; stop it first or force`, { adapter: ADAPTER });
    }
    this.containers.delete(id);
    this.figures.forget(id);
    this.names.delete(r.summary.name);
    this.output.forget(id);
    this.streams.ended(id, undefined);
    this.changes.emit('removed', id, r.spec.labels, this.clock.now());
  }

  async exec(id: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
    await this.enter('exec', id);
    const r = this.get(id);
    if (r.summary.state !== 'running')
      throw new KubeletError('Conflict', `cannot exec in ${r.summary.name}: it is ${r.summary.state}`, { adapter: ADAPTER });
    const delay = this.execLatency.get(id) ?? 0;
    if (delay > timeoutMs) {
      await sleep(this.clock, timeoutMs);
      throw new KubeletError('Timeout', `exec ${command.join(' ')} in ${r.summary.name}: no exit within ${timeoutMs} ms`, {
        adapter: ADAPTER,
      });
    }
    if (delay > 0) await sleep(this.clock, delay);
    return (r.exec ?? (() => ({ exitCode: 0, output: '' })))({ ...r.summary }, command);
  }

  /** What the container printed (`print`), by the logs contract; `follow` ends when it stops running or is removed. */
  async logs(id: string, options: LogReadOptions = {}): Promise<AsyncIterable<LogLine>> {
    await this.enter('logs', id);
    this.get(id);
    return this.output.read(id, options, () => this.containers.get(id)?.summary.state === 'running');
  }

  /**
   * Started, exited (with its code) and removed events of labelled containers, emitted by the call
   * or control (`exit`, `killSandbox`, a stop timeout) that made the change, in that order.
   */
  events(signal: AbortSignal): AsyncIterable<ContainerEvent> {
    return this.changes.stream(signal);
  }

  // ---- controls for tests and embedders --------------------------------------------------------

  /** Ends every open event stream with `error` (default `Unavailable`), as a lost engine would. */
  breakEvents(error?: Error): void {
    this.changes.break(error);
  }

  /** How many event streams are open (aborted ones must let go). */
  get openEventStreams(): number {
    return this.changes.openStreams;
  }

  /**
   * The running container prints `text` on `stream` now (each line stamped with the clock's time);
   * followers see it at once. A text that does not end in a newline leaves a part of a line.
   * `Conflict` when the container is not running: only a running process prints.
   */
  print(id: string, stream: LogStream, text: string | Uint8Array): void {
    const r = this.get(id);
    if (r.summary.state !== 'running')
      throw new KubeletError('Conflict', `${r.summary.name} is ${r.summary.state}: only a running container prints`, { adapter: ADAPTER });
    this.output.print(id, stream, text, this.clock.now());
    this.streams.printed(id, stream, text);
  }

  /** How many log reads are open (a reader that let go, or was aborted, must not keep one). */
  get openLogStreams(): number {
    return this.output.openStreams;
  }

  /** What `capabilities.stats` reports for the container: CPU time used (ns), memory in use (bytes)… */
  setStats(id: string, use: MemoryUse): void {
    this.figures.set(id, use);
  }

  /** Makes a running container exit on its own with `exitCode` (a crash when non-zero). */
  exit(id: string, exitCode = 0): void {
    const r = this.get(id);
    if (r.summary.state === 'running') this.finish(r, exitCode);
  }

  /**
   * The sandbox's namespace dies (its holder exited, the engine restarted): it is `notready` for
   * good, and its running containers are killed (exit 137).
   */
  killSandbox(id: string): void {
    const s = this.sandboxes.get(id);
    if (s === undefined) throw new KubeletError('NotFound', `no such sandbox: ${id}`, { adapter: ADAPTER });
    if (s.summary.state === 'ready') s.summary = { ...s.summary, state: 'notready' };
    for (const r of this.containers.values()) if (r.sandbox === id && r.summary.state === 'running') this.finish(r, 137);
  }

  /** A synchronous view of every sandbox, foreign ones included. */
  sandboxSnapshot(): SandboxSummary[] {
    return [...this.sandboxes.values()].map((s) => ({ ...s.summary }));
  }

  /**
   * The spec a sandbox was run with, as given: a host-network sandbox (`hostNetwork: true`) is kept
   * like any other, publishing nothing, since its ports are the host's.
   */
  sandboxSpecOf(id: string): SandboxSpec {
    const s = this.sandboxes.get(id);
    if (s === undefined) throw new KubeletError('NotFound', `no such sandbox: ${id}`, { adapter: ADAPTER });
    return s.spec;
  }

  /** The sandbox a container was created in. */
  sandboxOf(containerId: string): string {
    return this.get(containerId).sandbox;
  }

  /** The container ignores stop signals and is killed only when the stop timeout runs out. */
  hangOnStop(id: string): void {
    this.get(id).ignoresStop = true;
  }

  /** What commands run in this container do (for exec liveness probes); `delayMs` is how long they take. */
  onExec(id: string, handler: ExecHandler, delayMs = 0): void {
    this.get(id).exec = handler;
    this.execLatency.set(id, delayMs);
  }

  /** Adds an image as if it had been built locally (`images.add`). */
  addImage(image: string): void {
    this.images.add(image);
  }

  /** A synchronous view of every container, foreign ones included. */
  snapshot(): ContainerSummary[] {
    return [...this.containers.values()].map((r) => ({ ...r.summary }));
  }

  // ---- internals ------------------------------------------------------------------------------
  private get(id: string): Record_ {
    const r = this.containers.get(id);
    if (r === undefined) throw new KubeletError('NotFound', `no such container: ${id}`, { adapter: ADAPTER });
    return r;
  }

  private finish(r: Record_, exitCode: number): void {
    r.summary = { ...r.summary, state: 'exited', finishedAt: this.clock.now(), exitCode };
    this.output.ended(r.summary.id);
    this.streams.ended(r.summary.id, exitCode);
    this.changes.emit('exited', r.summary.id, r.spec.labels, this.clock.now(), exitCode);
  }

  private newId(): string {
    return (this.nextId++).toString(16).padStart(12, '0');
  }
}

/** Registers a `MemoryRuntime` as the agent's runtime and returns it. */
export function registerMemoryRuntime(registry: Registry, options: MemoryRuntimeOptions = {}): MemoryRuntime {
  const runtime = new MemoryRuntime(options);
  registry.register(Tokens.Runtime, { useValue: runtime });
  return runtime;
}
