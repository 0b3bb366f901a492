import 'reflect-metadata';
import { Tokens, type Clock, type EventSink, type Logger } from '@kubelet-ts/core';
import type { DependencyContainer } from 'tsyringe';
import { Kubelet, type KubeletOptions } from './kubelet.js';

export type KubeletSettings = Omit<KubeletOptions, 'runtime' | 'sources' | 'events' | 'logger' | 'clock'>;

/**
 * Builds an agent from a tsyringe container: the runtime registered under `Tokens.Runtime`, every
 * source under `Tokens.Source` (in registration order, which is their priority), and the optional
 * event sink, logger and clock.
 */
export function resolveKubelet(container: DependencyContainer, settings: KubeletSettings = {}): Kubelet {
  const optional = <T>(token: symbol): T | undefined => (container.isRegistered(token, true) ? container.resolve<T>(token) : undefined);
  const events = optional<EventSink>(Tokens.EventSink);
  const logger = optional<Logger>(Tokens.Logger);
  const clock = optional<Clock>(Tokens.Clock);
  return new Kubelet({
    ...settings,
    runtime: container.resolve(Tokens.Runtime),
    sources: container.isRegistered(Tokens.Source, true) ? container.resolveAll(Tokens.Source) : [],
    ...(events === undefined ? {} : { events }),
    ...(logger === undefined ? {} : { logger }),
    ...(clock === undefined ? {} : { clock }),
  });
}
