import type { Clock, EventSink, Logger, Token } from '@kubelet-ts/core';
import { Tokens } from '@kubelet-ts/core';
import { createKubelet, type Kubelet, type KubeletOptions } from './kubelet.js';
import { FanOutEventSink } from './log-event-sink.js';

/** The agent's options, less the parts `resolveKubelet` takes from the DI container (runtime, sources, events, logger, clock). */
export type KubeletSettings = Omit<KubeletOptions, 'runtime' | 'sources' | 'events' | 'logger' | 'clock'>;

/**
 * The slice of a DI container the agent is resolved from. A tsyringe `DependencyContainer`
 * satisfies it as it is, so the runner needs no DI library of its own.
 */
export interface Resolver {
  resolve<T>(token: Token<T>): T;
  resolveAll<T>(token: Token<T>): T[];
  isRegistered(token: symbol, recursive?: boolean): boolean;
}

/**
 * Builds an agent from a DI container filled by the adapters' `register…()` functions: the runtime
 * under `Tokens.Runtime`, every source under `Tokens.Source` (registration order is their
 * priority), every event sink under `Tokens.EventSink` (each gets every event), and the optional
 * logger and clock, and hands them to `createKubelet`: the same agent, its parts taken from the
 * container. This is how the CLI builds its agent.
 */
export function resolveKubelet(container: Resolver, settings: KubeletSettings = {}): Kubelet {
  const all = <T>(token: Token<T>): T[] => (container.isRegistered(token, true) ? container.resolveAll(token) : []);
  const optional = <T>(token: Token<T>): T | undefined => (container.isRegistered(token, true) ? container.resolve(token) : undefined);
  const sinks = all<EventSink>(Tokens.EventSink);
  const logger = optional<Logger>(Tokens.Logger);
  const clock = optional<Clock>(Tokens.Clock);
  return createKubelet({
    ...settings,
    runtime: container.resolve(Tokens.Runtime),
    sources: all(Tokens.Source),
    ...(sinks.length === 0 ? {} : { events: sinks.length === 1 ? sinks[0]! : new FanOutEventSink(sinks) }),
    ...(logger === undefined ? {} : { logger }),
    ...(clock === undefined ? {} : { clock }),
  });
}
