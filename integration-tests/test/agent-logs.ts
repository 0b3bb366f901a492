import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * What a container printed, read from the agent's `/containerLogs/<namespace>/<pod>/<container>`
 * once it holds `text` (or after `ms`, whatever it holds then, for the test to say what is missing).
 */
export async function printedOnce(url: string, path: string, text: string, ms = 30_000): Promise<string> {
  let printed = '';
  for (const deadline = Date.now() + ms; !printed.includes(text) && Date.now() < deadline; ) {
    printed = await (await fetch(`${url}/containerLogs/${path}`)).text();
    if (!printed.includes(text)) await new Promise((r) => setTimeout(r, 200));
  }
  return printed;
}

/** Writes a v1 Pod named `name` into the agent's --config directory `dir`. */
export function writeV1Pod(dir: string, name: string, spec: object, metadata: object = {}): Promise<void> {
  return writeFile(join(dir, `${name}.json`), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name, ...metadata }, spec }));
}
