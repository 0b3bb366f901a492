import { buildProgram, normaliseFlagSpelling, optionsOf } from '../src/options.js';

/** The CLI's options from `argv` on the in-memory runtime, as the agent reads them; a bad flag throws (not exits). */
export function parseOptions(argv: readonly string[]) {
  const program = buildProgram();
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  program.exitOverride();
  program.parse(normaliseFlagSpelling(['--runtime', 'memory', ...argv]), { from: 'user' });
  return optionsOf(program);
}
