import { execFileSync } from 'node:child_process';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';

/** The agent's directory when `--root-dir` is not given (the kubelet's is /var/lib/kubelet). */
export const DEFAULT_ROOT_DIR = '/var/lib/kubelet-ts';

/** What the 2014 flags add to today's options (see `addLegacyFlags`). */
export interface LegacyFlags {
  readonly rootDir?: string;
  readonly enableServer: boolean;
  readonly allowPrivileged: boolean;
  readonly v?: number;
  readonly logtostderr: boolean;
  readonly alsologtostderr: boolean;
  readonly logDir?: string;
  readonly stderrthreshold?: string;
}

/** The 2014 names of flags that are spelled otherwise today (after `_` → `-`). */
const RENAMED: Readonly<Record<string, string>> = {
  '--docker-endpoint': '--docker-host',
  '--network-container-image': '--pod-infra-image',
};

/**
 * 2014 command lines as Go's flag package took them: `-config=/etc/kubelet` and `--config` alike,
 * `_` or `-` in names (`--etcd_servers`), and the 2014 names of renamed flags. `-h` stays help.
 */
export function normaliseFlagSpelling(argv: readonly string[]): string[] {
  return argv.map((arg) => {
    // A single dash and a name of two letters or more, or any name with `=`: Go's long flag.
    // `-h` stays help, `-v 4` glog's verbosity; `-5` or `-` are values.
    const long = /^-[A-Za-z][A-Za-z0-9_-]+(=|$)/.test(arg) || /^-[A-Za-z]=/.test(arg) ? `-${arg}` : arg;
    if (!long.startsWith('--')) return long;
    const eq = long.indexOf('=');
    const flag = (eq === -1 ? long : long.slice(0, eq)).replaceAll('_', '-');
    return (RENAMED[flag] ?? flag) + (eq === -1 ? '' : long.slice(eq));
  });
}

/** A Go boolean flag: `--flag`, `--flag=true`, `--flag=false` (and 1/0, t/f). */
export function goBool(value: string): boolean {
  const v = String(value).toLowerCase();
  if (['true', 't', '1'].includes(v)) return true;
  if (['false', 'f', '0'].includes(v)) return false;
  throw new InvalidArgumentError(`expected true or false, got ${JSON.stringify(value)}`);
}

function level(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a verbosity 0, 1, 2, …, got ${JSON.stringify(value)}`);
  return n;
}

/** Flags the 2014 kubelet was started with, accepted so that its command lines work unchanged. */
export function addLegacyFlags(program: Command): Command {
  const bool = (flags: string, help: string, preset: boolean, fallback: boolean) =>
    new Option(`${flags} [bool]`, help).argParser(goBool).preset(String(preset)).default(fallback);
  return program
    .addOption(
      new Option(
        '--root-dir <dir>',
        "the agent's directory (default /var/lib/kubelet-ts): each source's last good set is kept in <dir>/sources, and pod volumes live in <dir>/volumes unless --volumes-root is given",
      ),
    )
    .addOption(
      bool('--enable-server', "2014: serve the agent's HTTP API and manifest routes (--enable-server=false: no server)", true, true),
    )
    .addOption(
      bool(
        '--allow-privileged',
        'the 2014 flag: accept containers with securityContext.privileged: true (every device and capability of the host); refused by field otherwise',
        true,
        false,
      ),
    )
    .addOption(
      new Option('-v, --v <level>', '2014 (glog): verbosity; 0-1 info, 2-3 debug, 4 and more trace (--log-level wins)').argParser(level),
    )
    .addOption(bool('--logtostderr', '2014 (glog): accepted; logs go to stdout as JSON lines', true, false))
    .addOption(bool('--alsologtostderr', '2014 (glog): accepted; logs go to stdout as JSON lines', true, false))
    .addOption(new Option('--log-dir <dir>', '2014 (glog): accepted and ignored; logs go to stdout'))
    .addOption(new Option('--stderrthreshold <level>', '2014 (glog): accepted and ignored'));
}

/** The log level: `--log-level` when given, else glog's `--v` mapped, else info. */
export function logLevelOf(options: { readonly logLevel: string; readonly v?: number }, given: boolean): string {
  if (given || options.v === undefined) return options.logLevel;
  return options.v >= 4 ? 'trace' : options.v >= 2 ? 'debug' : 'info';
}

/** Pod volumes: `--volumes-root` when given, else `<--root-dir>/volumes`, else the default. */
export function volumesRootOf(options: { readonly volumesRoot: string; readonly rootDir?: string }, given: boolean): string {
  return given || options.rootDir === undefined ? options.volumesRoot : join(options.rootDir, 'volumes');
}

/** This host's name as the 2014 agent took it: the FQDN (`hostname -f`), else the OS's name. */
export function defaultHostname(): string {
  try {
    const fqdn = execFileSync('hostname', ['-f'], { encoding: 'utf8', timeout: 2000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (fqdn !== '') return fqdn;
  } catch {
    // No `hostname` command, or no resolvable FQDN: the OS's name.
  }
  return osHostname();
}
