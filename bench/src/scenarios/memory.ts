import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { row, summarise, type Row } from '../stats.js';

/**
 * Resident memory of an agent holding `pods` manifests, measured in a process of its own (after
 * full GCs), with the in-memory engine's share taken out.
 */
// The compiled child, whether this module runs from dist/ (npm run bench) or src/ (jest).
const CHILD = fileURLToPath(new URL('../../dist/scenarios/memory-child.js', import.meta.url));

export async function memory(pods: number): Promise<Row[]> {
  const child = fork(CHILD, [String(pods)], { execArgv: ['--expose-gc'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const [node, engine, agent] = await new Promise<[number, number, number]>((resolve, reject) => {
    child.on('message', (m) => resolve(m as [number, number, number]));
    child.on('error', reject);
    child.on('exit', (code) => code !== 0 && reject(new Error(`memory child exited with ${code}`)));
  });
  const mb = (bytes: number) => bytes / 1024 / 1024;
  const agentRss = node + (agent - engine); // Node itself plus what the agent added
  return [
    row({
      scenario: '5. memory',
      metric: `agent RSS holding ${pods.toLocaleString('en')} manifests`,
      unit: 'MB',
      value: summarise([mb(agentRss)]),
      baseline: { name: 'Node.js alone', value: summarise([mb(node)]) },
      target: { text: '≤ 150 MB', met: mb(agentRss) <= 150 },
      note: `one process: Node alone ${mb(node).toFixed(0)} MB; with an in-memory engine running ${pods.toLocaleString('en')} pods (a sandbox and 2 containers each) ${mb(engine).toFixed(0)} MB; plus the agent holding the manifests and adopting them ${mb(agent).toFixed(0)} MB. The agent's RSS is Node's plus what the agent added (a Docker-backed agent holds no containers)`,
    }),
  ];
}
