import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { row, summarise, type Row } from '../stats.js';

/**
 * Resident memory of an agent holding `pods` manifests, measured in a process of its own (after a
 * GC): the agent, its in-memory runtime with 2 × `pods` containers, and Node itself.
 */
export async function memory(pods: number): Promise<Row[]> {
  const child = fork(fileURLToPath(new URL('./memory-child.js', import.meta.url)), [String(pods)], { execArgv: ['--expose-gc'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const [baseline, loaded] = await new Promise<[number, number]>((resolve, reject) => {
    child.on('message', (m) => resolve(m as [number, number]));
    child.on('error', reject);
    child.on('exit', (code) => code !== 0 && reject(new Error(`memory child exited with ${code}`)));
  });
  const mb = (bytes: number) => bytes / 1024 / 1024;
  return [
    row({
      scenario: '5. memory',
      metric: `agent RSS holding ${pods.toLocaleString('en')} manifests`,
      unit: 'MB',
      value: summarise([mb(loaded)]),
      baseline: { name: 'same process before the agent', value: summarise([mb(baseline)]) },
      target: { text: '≤ 150 MB', met: mb(loaded) <= 150 },
      note: `includes the in-memory runtime's ${(2 * pods).toLocaleString('en')} containers`,
    }),
  ];
}
