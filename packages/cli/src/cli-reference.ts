import { Help, type Argument, type Command, type Option } from 'commander';
import { convertProgram } from './convert.js';
import { describeProgram } from './describe.js';
import { execProgram } from './exec.js';
import { getProgram } from './get.js';
import { hollowProgram } from './hollow.js';
import { logsProgram } from './logs.js';
import { buildProgram } from './options.js';
import { planProgram } from './plan.js';
import { portForwardProgram } from './port-forward.js';
import { topProgram } from './top.js';
import { volumesProgram } from './volumes.js';

/** The lines between which docs/CLI.md holds the generated reference; the rest of the page is written by hand. */
export const REFERENCE_BEGIN =
  '<!-- BEGIN cli-reference: generated from the commander definitions; run `npm run docs:cli -w @kubelet-ts/cli` -->';
export const REFERENCE_END = '<!-- END cli-reference -->';

/** How to bring docs/CLI.md up to date, as the docs test and the script say it. */
export const REGENERATE = 'npx tsc -b && npm run docs:cli -w @kubelet-ts/cli';

/**
 * Every command of `kubelet-ts`, in the order the reference lists them, built by the same
 * functions its `main` parses with: the reference cannot say a flag the command does not take.
 */
export function cliPrograms(): Command[] {
  return [
    buildProgram(),
    planProgram(),
    getProgram(),
    describeProgram(),
    logsProgram(),
    execProgram('exec'),
    execProgram('attach'),
    portForwardProgram(),
    topProgram(),
    convertProgram(),
    hollowProgram(),
    volumesProgram(),
  ];
}

/** Text in a Markdown paragraph or table cell: no HTML tag, no table break, no emphasis. */
function inline(text: string): string {
  return text.replaceAll('\\', '\\\\').replaceAll('|', '\\|').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('*', '\\*');
}

/** A code span that holds any text (a backtick inside takes a longer fence). */
function code(text: string): string {
  const fence = text.includes('`') ? '``' : '`';
  return `${fence}${text.includes('`') ? ` ${text} ` : text}${fence}`.replaceAll('|', '\\|');
}

/** The default as `--help` shows it, or as the option describes it where `--help` shows none. */
function defaultOf(option: Option): string {
  if (option.defaultValueDescription !== undefined) return option.defaultValueDescription;
  if (option.defaultValue === undefined) return '';
  const shown = option.required || option.optional || (option.isBoolean() && typeof option.defaultValue === 'boolean');
  const value: unknown = option.defaultValue;
  if (!shown || (typeof value === 'object' && value !== null && Object.keys(value).length === 0)) return '';
  return typeof value === 'string' ? (value === '' ? "''" : value) : JSON.stringify(value);
}

/** What `--help` adds after an option's description (but its default, which has a column). */
function extrasOf(option: Option): string[] {
  const extras: string[] = [];
  if (option.argChoices !== undefined) extras.push(`one of ${option.argChoices.join(', ')}`);
  if (option.presetArg !== undefined && option.optional) extras.push(`alone: ${String(option.presetArg)}`);
  if (option.envVar !== undefined) extras.push(`env ${option.envVar}`);
  return extras;
}

function optionRow(option: Option): string {
  const extras = extrasOf(option);
  const meaning = inline(option.description) + (extras.length > 0 ? ` (${inline(extras.join('; '))})` : '');
  const fallback = defaultOf(option);
  return `| ${code(option.flags)} | ${fallback === '' ? '' : code(fallback)} | ${meaning} |`;
}

function argumentRow(help: Help, argument: Argument): string {
  return `| ${code(help.argumentTerm(argument))} | ${inline(argument.description)} |`;
}

function commandSection(command: Command, agentFlags: ReadonlySet<string>): string[] {
  const help = new Help();
  const lines = [`### ${code(command.name())}`, '', `Usage: ${code(help.commandUsage(command))}`, ''];
  const description = help.commandDescription(command);
  if (description.includes('\n')) lines.push('```text', description, '```', '');
  else if (description !== '') lines.push(inline(description), '');
  const args = help.visibleArguments(command);
  if (args.length > 0) lines.push('| argument | meaning |', '|---|---|', ...args.map((a) => argumentRow(help, a)), '');
  // `plan` takes the agent's options: the reference lists only what it adds.
  const own = help.visibleOptions(command).filter((o) => !agentFlags.has(o.flags));
  if (agentFlags.size > 0 && own.length < help.visibleOptions(command).length)
    lines.push(`Every option of ${code('kubelet-ts')} (above), and:`, '');
  lines.push('| option | default | meaning |', '|---|---|---|', ...own.map(optionRow), '');
  return lines;
}

/** The generated part of docs/CLI.md: each command's usage, description, arguments and options. */
export function cliReference(): string {
  const [agent, ...others] = cliPrograms();
  const agentFlags = new Set(new Help().visibleOptions(agent!).map((o) => o.flags));
  const lines = [
    REFERENCE_BEGIN,
    '',
    ...commandSection(agent!, new Set()),
    ...others.flatMap((command) => commandSection(command, command.name() === 'kubelet-ts plan' ? agentFlags : new Set())),
    REFERENCE_END,
  ];
  return lines.join('\n');
}

/** `page` with its reference replaced by `reference`; throws when the page has no markers. */
export function spliceReference(page: string, reference: string): string {
  const begin = page.indexOf(REFERENCE_BEGIN);
  const end = page.indexOf(REFERENCE_END);
  if (begin === -1 || end < begin) throw new Error(`docs/CLI.md has no "${REFERENCE_BEGIN}" … "${REFERENCE_END}" markers`);
  return page.slice(0, begin) + reference + page.slice(end + REFERENCE_END.length);
}
