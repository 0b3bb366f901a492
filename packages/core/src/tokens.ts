import type { Clock } from './clock.js';
import type { EventSink } from './events.js';
import type { Logger } from './logger.js';
import type { ContainerRuntime } from './runtime.js';
import type { ManifestSource } from './source.js';

/**
 * A DI token that carries the type it resolves to. Tokens are plain symbols, so core needs no DI
 * library; tsyringe accepts them as `InjectionToken`s.
 */
export type Token<T> = symbol & { readonly __resolves?: T };

function token<T>(description: string): Token<T> {
  return Symbol.for(`kubelet-ts.${description}`) as Token<T>;
}

/**
 * The typed tokens adapters register under (`register…(container, options)`) and the runner's
 * `resolveKubelet` resolves: a runtime, sources in priority order, event sinks, a clock, a logger.
 */
export const Tokens = {
  Runtime: token<ContainerRuntime>('ContainerRuntime'),
  /** Registered once per source; resolved with `resolveAll`. */
  Source: token<ManifestSource>('ManifestSource'),
  EventSink: token<EventSink>('EventSink'),
  Clock: token<Clock>('Clock'),
  Logger: token<Logger>('Logger'),
} as const;

/**
 * The slice of a DI container that adapters' `register…` functions use. A tsyringe
 * `DependencyContainer` satisfies it as it is.
 */
export interface Registry {
  register<T>(token: Token<T>, provider: { useValue: T }): unknown;
}
