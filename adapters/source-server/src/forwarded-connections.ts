import type { AgentView, PodTarget } from '@kubelet-ts/core';
import type { Forward } from './channel-streams.js';

/** How many forwarded connections the agent makes, and how fast. */
export interface ForwardLimits {
  /**
   * The most forwarded connections open at once, all sessions together (default 256): past it a
   * port is refused on its error channel. Each one may cost a process in the pod's namespace
   * (Docker, Podman), so one request must not be able to exhaust the host.
   */
  readonly maxForwardedConnections?: number;
  /** How many connections of one session are dialled at once (default 4). */
  readonly dialsAtOnce?: number;
}

const DEFAULT_MAX_FORWARDED_CONNECTIONS = 256;
const DEFAULT_DIALS_AT_ONCE = 4;

/**
 * The agent's forwarded connections: counted while open, dialled a few at a time for a session,
 * and never dialled once the session's client has gone (issue 48: relays kept being started after
 * the client left, 483 of them 10 s later).
 */
export class ForwardedConnections {
  private open = 0;
  private readonly max: number;
  private readonly atOnce: number;

  constructor(limits: ForwardLimits) {
    this.max = limits.maxForwardedConnections ?? DEFAULT_MAX_FORWARDED_CONNECTIONS;
    this.atOnce = Math.max(1, limits.dialsAtOnce ?? DEFAULT_DIALS_AT_ONCE);
  }

  /**
   * Each port's connection, or why there is none, in the order asked; undefined when the client
   * went before all were made (what was made is closed, and nothing more is dialled).
   */
  async dial(view: AgentView, target: PodTarget, ports: readonly number[], gone: Promise<void>): Promise<Forward[] | undefined> {
    let left = false;
    void gone.then(() => (left = true));
    const made: Array<Forward | undefined> = ports.map(() => undefined);
    let next = 0;
    const worker = async () => {
      while (!left && next < ports.length) {
        const i = next++;
        made[i] = await this.one(view, target, ports[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.atOnce, ports.length) }, worker));
    if (!left) return made as Forward[];
    for (const f of made) if (f !== undefined && 'connection' in f) f.connection.destroy();
    return undefined;
  }

  private async one(view: AgentView, target: PodTarget, port: number): Promise<Forward> {
    const where = `port ${port} to pod ${target.namespace}/${target.pod}`;
    if (this.open >= this.max)
      return {
        port,
        error: `error forwarding ${where}: the agent forwards at most ${this.max} connections at once; try again when one ends`,
      };
    this.open++;
    try {
      const connection = await view.portForward(target, port);
      connection.once('close', () => this.open--);
      return { port, connection };
    } catch (error) {
      this.open--;
      return { port, error: `error forwarding ${where}: ${(error as Error).message}` };
    }
  }
}
