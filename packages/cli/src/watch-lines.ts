import { AgentClientError, type AgentClient } from './agent-client.js';
import type { WatchEvent } from './v1.js';

/**
 * Follows a watch of the agent (`GET path` with `watch=1`: a JSON object a line) and hands each
 * change to `onChange`, until `stopped` settles (then 0: the person stopped it) or the agent ends
 * the stream (0 too, as `kubectl get -w` ends when its watch closes). A stream cut short, or a
 * line that is not JSON, is an `AgentClientError`.
 */
export async function followWatch<T>(
  client: AgentClient,
  path: string,
  stopped: Promise<unknown>,
  onChange: (change: WatchEvent<T>) => void,
): Promise<void> {
  const abort = new AbortController();
  let stop = false;
  void stopped.then(
    () => {
      stop = true;
      abort.abort();
    },
    () => undefined,
  );
  let res: Awaited<ReturnType<AgentClient['get']>>;
  try {
    res = await client.get(path, abort.signal);
  } catch (error) {
    if (stop) return;
    throw error;
  }
  let pending = '';
  try {
    for await (const chunk of res) {
      pending += (chunk as Buffer).toString('utf8');
      let newline = pending.indexOf('\n');
      while (newline !== -1) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line !== '') onChange(parsed<T>(line, path));
        newline = pending.indexOf('\n');
      }
    }
  } catch (error) {
    if (stop) return;
    if (error instanceof AgentClientError) throw error;
    throw new AgentClientError(`the agent cut the watch of ${path} short: ${(error as Error).message}`, 'Failed', { cause: error });
  }
}

function parsed<T>(line: string, path: string): WatchEvent<T> {
  try {
    const change = JSON.parse(line) as WatchEvent<T>;
    if (typeof change === 'object' && change !== null && typeof change.type === 'string' && change.object !== undefined) return change;
  } catch {
    // Said below.
  }
  throw new AgentClientError(`${path} sent a line that is not a watch event: ${line.slice(0, 200)}`);
}
