/** The terminal a client command writes to, and its environment. */
const clientIo = () => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** Settles at the first SIGINT (Ctrl-C): what ends `port-forward` and `get -w`. */
const interrupted = () => new Promise((resolve) => process.once('SIGINT', resolve));

/**
 * Each command but the agent itself, loaded only when it is run: a client command starts in a
 * fraction of the time the agent's modules (runtimes, sources, server) take to load.
 */
const COMMANDS: Readonly<Record<string, (argv: readonly string[]) => Promise<number>>> = {
  plan: async (argv) => (await import('./plan.js')).planMain(argv),
  convert: async (argv) => (await import('./convert.js')).convertMain(argv),
  volumes: async (argv) => (await import('./volumes.js')).volumesMain(argv, clientIo()),
  logs: async (argv) => (await import('./logs.js')).logsMain(argv),
  top: async (argv) => (await import('./top.js')).topMain(argv),
  exec: async (argv) => (await import('./exec.js')).execMain('exec', argv),
  attach: async (argv) => (await import('./exec.js')).execMain('attach', argv),
  'port-forward': async (argv) => (await import('./port-forward.js')).portForwardMain(argv, { ...clientIo(), stopped: interrupted() }),
  get: async (argv) => (await import('./get.js')).getMain(argv, { ...clientIo(), stopped: interrupted }),
  describe: async (argv) => (await import('./describe.js')).describeMain(argv, clientIo()),
  hollow: async (argv) => (await import('./hollow.js')).hollowMain(argv),
};

/**
 * Runs the agent until SIGINT or SIGTERM, or one of the client commands (`get`, `describe`,
 * `logs`, `exec`, `attach`, `port-forward`, `top`) or `plan` / `convert`; returns the process exit code.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const command = argv[0] !== undefined && Object.hasOwn(COMMANDS, argv[0]) ? COMMANDS[argv[0]] : undefined;
  if (command !== undefined) return command(argv.slice(1));
  return (await import('./agent-main.js')).agentMain(argv);
}
