import { LogsAgent, type LogsAgentOptions, type LogsPod } from './logs-agent.js';

// The agent of the RSS measurement of logs-rss.ts, in a process of its own so that its RSS is the
// agent's alone: the same LogsAgent as the in-process rows (its runtime, its HTTP server), running
// one pod. Told `{ agent, pod }` as JSON in argv; says `{ url }` once the pod runs; answers
// `memory` with `{ memory }` (process.memoryUsage()); on `stop` (or when the parent goes away)
// removes the pod, closes, and exits.
const { agent: options, pod } = JSON.parse(process.argv[2] ?? '{}') as { agent: LogsAgentOptions; pod: LogsPod };
const agent = new LogsAgent(options);
let stopping: Promise<void> | undefined;
const stop = () =>
  (stopping ??= (async () => {
    try {
      await agent.clear();
    } finally {
      await agent.close();
    }
  })());

process.on('message', (message) => {
  // What V8 holds, beside the RSS the parent reads from /proc: heap or buffers.
  if (message === 'memory') return void process.send?.({ memory: process.memoryUsage() });
  if (message !== 'stop') return;
  stop().then(
    () => process.send?.('stopped', () => process.exit(0)),
    (error: unknown) => {
      process.stderr.write(`bench: the logs agent did not stop cleanly: ${String(error)}\n`);
      process.exit(1);
    },
  );
});
process.on('disconnect', () => {
  stop().finally(() => process.exit(1));
});

try {
  await agent.start();
  await agent.run(pod);
  process.send?.({ url: agent.url });
} catch (error) {
  process.stderr.write(`bench: the logs agent did not start: ${String(error)}\n`);
  await agent.close().catch(() => undefined);
  process.exit(1);
}
