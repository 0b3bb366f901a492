import { stat } from 'node:fs/promises';
import { type Command, CommanderError, Option } from 'commander';
import { pino } from 'pino';
import { Tokens, isKubeletError, nodeNameProblem, type ContainerRuntime, type FieldError, type ManifestSource } from '@kubelet-ts/core';
import { formatPlanReport, previewPlan } from '@kubelet-ts/runner';
import { parseDuration } from './duration.js';
import { createLogger, routeProcessWarnings } from './logging.js';
import { defaultHostname } from './legacy-flags.js';
import { buildProgram, normaliseFlagSpelling, optionsOf, type CliOptions } from './options.js';
import { wire } from './wiring.js';

/** A manifest a source refused, with every field that is wrong. */
interface Rejection {
  readonly source: string;
  readonly message: string;
  readonly fieldErrors: readonly FieldError[];
}

/** `kubelet-ts plan`'s arguments and options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function planProgram(): Command {
  return buildProgram()
    .name('kubelet-ts plan')
    .addOption(new Option('--output <format>', 'text or json').choices(['text', 'json']).default('text'))
    .addOption(new Option('--wait <duration>', 'how long to wait for every source to deliver').default('10s'));
}

/**
 * `kubelet-ts plan`: the agent's flags, but it only prints what a pass would do now, then exits
 * 0 (in sync), 2 (the plan has steps, as `terraform plan -detailed-exitcode`) or 1 (an error, or a
 * manifest a source refused: each is printed with its field errors, and in JSON as `rejected`).
 */
export async function planMain(argv: readonly string[]): Promise<number> {
  const program = planProgram();
  try {
    program.parse(normaliseFlagSpelling(argv), { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1;
    throw error;
  }
  const options = optionsOf<CliOptions & { output: 'text' | 'json'; wait: string }>(program);
  // The plan goes to stdout; logs go to stderr.
  const logger = createLogger({
    level: options.logLevel === 'info' ? 'warn' : options.logLevel,
    pretty: false,
    destination: pino.destination({ fd: 2, sync: true }),
  });
  routeProcessWarnings(logger);
  const givenHostname = options.hostnameOverride ?? defaultHostname();
  const hostname = givenHostname.toLowerCase();
  try {
    const problem = nodeNameProblem(hostname);
    if (problem !== undefined) throw new Error(problem);
    // The agent waits for a missing --config path to appear; a plan of it would say "in sync" of nothing.
    if (options.config !== undefined) await mustExist(options.config);
    const { container, close } = await wire(options, hostname, logger, 'plan', givenHostname);
    const runtime = container.resolve<ContainerRuntime>(Tokens.Runtime);
    const sources = container.isRegistered(Tokens.Source, true) ? container.resolveAll<ManifestSource>(Tokens.Source) : [];
    const problems: string[] = [];
    const rejected: Rejection[] = [];
    const report = await previewPlan({
      runtime,
      sources,
      hostname,
      waitMs: parseDuration(options.wait),
      onError: (source, error) => {
        // A refused manifest is not in the plan: "in sync" would be a lie, so it is an answer of its own.
        if (isKubeletError(error, 'InvalidManifest')) rejected.push({ source, message: error.message, fieldErrors: error.fieldErrors });
        else problems.push(`${source}: ${error.message}`);
      },
    });
    await close();
    for (const p of problems) process.stderr.write(`warning: ${p}\n`);
    if (options.output === 'json') process.stdout.write(`${JSON.stringify({ ...report, rejected }, null, 2)}\n`);
    else process.stdout.write(formatPlanReport(report, `plan for ${hostname} on ${runtime.name}`) + formatRejected(rejected));
    if (rejected.length > 0) return 1;
    return report.inSync ? 0 : 2;
  } catch (error) {
    process.stderr.write(`kubelet-ts plan: ${(error as Error).message}\n`);
    return 1;
  }
}

/** A --config path that is not there fails the plan, naming it. */
async function mustExist(path: string): Promise<void> {
  try {
    await stat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file or directory' : ((error as Error).message ?? String(code));
    throw new Error(`--config ${path}: ${why}; give the path of a manifest file or of a directory of manifests`);
  }
}

function formatRejected(rejected: readonly Rejection[]): string {
  if (rejected.length === 0) return '';
  const lines = [`rejected: ${rejected.length} manifest text(s); what they ask for is not in this plan`];
  for (const r of rejected) {
    lines.push(`  ${r.source}: ${r.message}`);
    for (const f of r.fieldErrors) lines.push(`    ${f.path}: ${f.message}`);
  }
  return `${lines.join('\n')}\n`;
}
