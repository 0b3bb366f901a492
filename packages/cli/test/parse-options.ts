import { writeFile } from 'node:fs/promises';
import { buildProgram, normaliseFlagSpelling, optionsOf } from '../src/options.js';

/** The CLI's options from `argv` on the in-memory runtime, as the agent reads them; a bad flag throws (not exits). */
export function parseOptions(argv: readonly string[]) {
  const program = buildProgram();
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  program.exitOverride();
  program.parse(normaliseFlagSpelling(['--runtime', 'memory', ...argv]), { from: 'user' });
  return optionsOf(program);
}

/** Writes a kubeconfig naming a cluster nothing serves (https://127.0.0.1:1): flags are checked before anything is dialled. */
export async function writeUnreachableKubeconfig(path: string): Promise<void> {
  await writeFile(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n'),
  );
}
