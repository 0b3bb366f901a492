import type { Readable } from 'node:stream';
import type Dockerode from 'dockerode';

/** One container event from the engine: `die`, `kill`, `stop`, `destroy`, `create`, `start`, … */
export interface EngineEvent {
  readonly action: string;
  readonly id: string;
  readonly labels: Record<string, string>;
}

/** Actions that mean a container stopped or went away. */
export const STOPPING = new Set(['kill', 'die', 'stop', 'destroy']);

/**
 * The engine's own event stream for containers carrying `label`: what really happened to them,
 * independent of what the agent says it did. `open` again after the engine restarts.
 */
export class EngineEvents {
  readonly events: EngineEvent[] = [];
  private stream: Readable | undefined;

  constructor(
    private readonly docker: Dockerode,
    private readonly label: string,
  ) {}

  async open(): Promise<void> {
    this.close();
    const stream = (await this.docker.getEvents({ filters: { type: ['container'], label: [this.label] } })) as Readable;
    let buffer = '';
    stream.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        const e = JSON.parse(line) as { Action: string; Actor: { ID: string; Attributes: Record<string, string> } };
        this.events.push({ action: e.Action, id: e.Actor.ID, labels: e.Actor.Attributes });
      }
    });
    stream.on('error', () => undefined);
    this.stream = stream;
  }

  /** A position to ask `since` about later. */
  mark(): number {
    return this.events.length;
  }

  /** Events after `mark`, as `action <name>` for readable failures; `name` picks the name from the labels. */
  since(mark: number, name: (labels: Record<string, string>, id: string) => string, actions?: ReadonlySet<string>): string[] {
    return this.events
      .slice(mark)
      .filter((e) => actions === undefined || actions.has(e.action))
      .map((e) => `${e.action} ${name(e.labels, e.id)}`);
  }

  close(): void {
    this.stream?.destroy();
    this.stream = undefined;
  }
}
