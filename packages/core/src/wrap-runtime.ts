import { CAPABILITIES, type Capability, type ContainerEvent, type ContainerRuntime, type RuntimeCapabilities } from './runtime.js';

/** Every call a runtime answers with a promise: those every runtime has (its images' too), and those of its powers. */
export type RuntimeOperation =
  | 'runSandbox'
  | 'listSandboxes'
  | 'stopSandbox'
  | 'removeSandbox'
  | 'list'
  | 'inspect'
  | 'create'
  | 'start'
  | 'stop'
  | 'remove'
  | 'pull'
  | 'hasImage'
  | 'listImages'
  | 'exec'
  | 'stats'
  | 'statsSample'
  | 'imageFs'
  | 'logs'
  | 'streamExec'
  | 'streamAttach'
  | 'portForward';

/**
 * Around one call of the wrapped runtime: `proceed` makes the call (at most once; not at all to
 * refuse it), `args` are its arguments as the caller gave them.
 */
export type AroundCall = <T>(operation: RuntimeOperation, args: readonly unknown[], proceed: () => Promise<T>) => Promise<T>;

/** What a wrapper changes; everything it leaves out is passed through as it is. */
export interface RuntimeWrapping {
  /**
   * Around every call that returns a promise, those of the image service (`pull`, `hasImage`) and
   * of the powers (`stats`, `logs`) included. For `logs` that is the opening of the stream (the
   * container looked up), not the reading: the stream itself is passed on whole, so a deadline or
   * a timer around it never cuts a `follow` short.
   */
  readonly around?: AroundCall;
  /** Around the event stream of a runtime that has one (`capabilities.events`). */
  readonly events?: (stream: AsyncIterable<ContainerEvent>, signal: AbortSignal) => AsyncIterable<ContainerEvent>;
}

type Facet<K extends keyof RuntimeCapabilities> = NonNullable<RuntimeCapabilities[K]>;

// One entry per power, and the mapped type makes a new power without an entry a compile error: a
// wrapper built here can never drop one (issue 21: the metrics and fault wrappers lost `events`).
const wrapCapability: {
  readonly [K in keyof RuntimeCapabilities]-?: (facet: Facet<K>, around: AroundCall, wrapping: RuntimeWrapping) => Facet<K>;
} = {
  events: (facet, _around, wrapping) => ({
    events: (signal) => (wrapping.events === undefined ? facet.events(signal) : wrapping.events(facet.events(signal), signal)),
  }),
  stats: (facet, around) => ({
    stats: (id) => around('stats', [id], () => facet.stats(id)),
    sample: (request) => around('statsSample', [request], () => facet.sample(request)),
    // An optional method of the power: kept exactly when the runtime has it.
    ...(facet.imageFs === undefined ? {} : { imageFs: () => around('imageFs', [], () => facet.imageFs!()) }),
  }),
  logs: (facet, around) => ({
    logs: (id, options) => around('logs', [id, options], () => facet.logs(id, options)),
    ...(facet.text === undefined ? {} : { text: (id, options) => around('logs', [id, options], () => facet.text!(id, options)) }),
  }),
  // As for logs: around the opening of a session or connection, never its life.
  streaming: (facet, around) => ({
    exec: (id, command, options) => around('streamExec', [id, command, options], () => facet.exec(id, command, options)),
    attach: (id, options) => around('streamAttach', [id, options], () => facet.attach(id, options)),
    portForward: (sandboxId, port) => around('portForward', [sandboxId, port], () => facet.portForward(sandboxId, port)),
  }),
};

const passThrough: AroundCall = (_operation, _args, proceed) => proceed();

/**
 * `inner` with `wrapping` around its calls, keeping every power it declares (and no other): the one
 * way to build a decorator of a runtime (metrics, injected faults, guards). Each call goes through
 * `around` with its operation and arguments, those of its image service too; the name is kept.
 */
export function wrapRuntime(inner: ContainerRuntime, wrapping: RuntimeWrapping): ContainerRuntime {
  const around = wrapping.around ?? passThrough;
  const call =
    <A extends unknown[], T>(operation: RuntimeOperation, method: (...args: A) => Promise<T>, self: object = inner) =>
    (...args: A): Promise<T> =>
      around(operation, args, () => method.apply(self, args));
  const capabilities: Partial<Record<Capability, unknown>> = {};
  for (const key of CAPABILITIES) {
    const facet = inner.capabilities[key];
    if (facet === undefined) continue;
    const wrap = wrapCapability[key] as (facet: unknown, around: AroundCall, wrapping: RuntimeWrapping) => unknown;
    capabilities[key] = wrap(facet, around, wrapping);
  }
  return {
    name: inner.name,
    capabilities: capabilities as RuntimeCapabilities,
    images: {
      pull: call('pull', inner.images.pull, inner.images),
      hasImage: call('hasImage', inner.images.hasImage, inner.images),
      list: call('listImages', inner.images.list, inner.images),
    },
    runSandbox: call('runSandbox', inner.runSandbox),
    listSandboxes: call('listSandboxes', inner.listSandboxes),
    stopSandbox: call('stopSandbox', inner.stopSandbox),
    removeSandbox: call('removeSandbox', inner.removeSandbox),
    list: call('list', inner.list),
    inspect: call('inspect', inner.inspect),
    create: call('create', inner.create),
    start: call('start', inner.start),
    stop: call('stop', inner.stop),
    remove: call('remove', inner.remove),
    exec: call('exec', inner.exec),
  };
}
