/**
 * The kernel's text formats that `KernelStats` reads, parsed without touching a file: the
 * cgroups of a process (`/proc/<pid>/cgroup`), the cgroup mounts (`/proc/self/mountinfo`), a
 * cgroup's flat-keyed files (`memory.stat`, `cpu.stat`) and one-number files (a namespace's
 * interfaces, `/proc/<pid>/net/dev`, are core's `netDevInterfaces`).
 */

/** Where a process sits in each cgroup hierarchy, as `/proc/<pid>/cgroup` says. */
export interface ProcessCgroups {
  /** cgroup v1: each line's controllers as written (`memory`, `cpu,cpuacct`) and its path. */
  readonly v1: ReadonlyArray<{ readonly controllers: string; readonly path: string }>;
  /** cgroup v2: the path of the `0::` line, if any (a hybrid host has both). */
  readonly v2?: string;
}

/** `4:memory:/docker/<id>` lines; `0::/…` is the unified (v2) hierarchy. */
export function processCgroupsOf(text: string): ProcessCgroups {
  const v1: Array<{ controllers: string; path: string }> = [];
  let v2: string | undefined;
  for (const line of text.split('\n')) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const [, hierarchy, controllers, path] = match as unknown as [string, string, string, string];
    if (hierarchy === '0' && controllers === '') v2 = path;
    else if (controllers !== '') v1.push({ controllers, path });
  }
  return v2 === undefined ? { v1 } : { v1, v2 };
}

/** A mounted cgroup hierarchy: what it holds (its v1 controllers, or v2), its root in the hierarchy, and where it is. */
export interface CgroupMount {
  readonly version: 1 | 2;
  /** v1: the controllers it holds (`memory`; `cpu`, `cpuacct`); v2: none listed. */
  readonly controllers: readonly string[];
  /** The cgroup the mount shows at its mount point (`/` unless a container was given a subtree). */
  readonly root: string;
  readonly mountPoint: string;
}

/**
 * The cgroup mounts of `/proc/self/mountinfo`, whose lines read
 * `34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory` (proc(5): the fields
 * after ` - ` are the type, the source and the super options, where cgroup v1 names its controllers).
 */
export function cgroupMountsOf(text: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of text.split('\n')) {
    const [mine, theirs] = line.split(' - ');
    if (mine === undefined || theirs === undefined) continue;
    const [, , , root, mountPoint] = mine.split(' ');
    const [type, , superOptions = ''] = theirs.split(' ');
    if (root === undefined || mountPoint === undefined) continue;
    if (type === 'cgroup2') mounts.push({ version: 2, controllers: [], root: unescaped(root), mountPoint: unescaped(mountPoint) });
    else if (type === 'cgroup')
      mounts.push({ version: 1, controllers: superOptions.split(','), root: unescaped(root), mountPoint: unescaped(mountPoint) });
  }
  return mounts;
}

/** mountinfo writes a space, tab, newline and backslash in a path as `\040`, `\011`, `\012`, `\134`. */
function unescaped(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** `key value` lines (`memory.stat`, v2 `cpu.stat`) as numbers by key; scanned, not split (it runs for every container every sample). */
export function flatKeyedOf(text: string): Record<string, number> {
  const figures: Record<string, number> = {};
  let at = 0;
  while (at < text.length) {
    let end = text.indexOf('\n', at);
    if (end === -1) end = text.length;
    const space = text.indexOf(' ', at);
    if (space > at && space < end) {
      const number = Number(text.slice(space + 1, end));
      if (!Number.isNaN(number)) figures[text.slice(at, space)] = number;
    }
    at = end + 1;
  }
  return figures;
}

/**
 * Above this a cgroup's memory limit is none: v1 writes "unlimited" as the largest page-aligned
 * signed 64-bit number (9223372036854771712), v2 as `max`. No machine has 4 EiB.
 */
const UNLIMITED = 2 ** 62;

/** A limit file (v1 `memory.limit_in_bytes`, v2 `memory.max`); undefined when it says unlimited. */
export function memoryLimitOf(text: string): number | undefined {
  const value = text.trim();
  if (value === 'max') return undefined;
  const limit = Number(value);
  return Number.isNaN(limit) || limit >= UNLIMITED ? undefined : limit;
}

/** A one-number file (v1 `cpuacct.usage`, `memory.usage_in_bytes`; v2 `memory.current`). */
export function numberOf(text: string): number {
  const value = Number(text.trim());
  if (Number.isNaN(value)) throw new Error(`not a number: ${JSON.stringify(text.slice(0, 40))}`);
  return value;
}
