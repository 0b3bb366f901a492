import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { HttpProblem, allow, decodePathSegment } from './http-kit.js';
import type { RouteAnswer, RouteHandler } from './route-handler.js';

/** The host's log directory the 2014 kubelet served under `/logs/`. */
export const DEFAULT_HOST_LOG_DIRECTORY = '/var/log';

/** Which directory `/logs/` serves. */
export interface HostLogsOptions {
  /** The directory `/logs/` serves. Default `/var/log`. */
  readonly directory?: string | undefined;
}

/**
 * `GET /logs/` and below: the host's log directory, as the 2014 kubelet served it (`/logs/` →
 * `/var/log/`). A directory is listed as plain text, one name a line, a directory's name followed
 * by `/` (a name with control characters percent-encoded, so every line is a name to ask for); a
 * regular file is streamed as it is read, with back-pressure. Confined to the directory: a
 * `..` or `/` inside a segment is a 400, and whatever a path resolves to through symbolic links
 * must lie inside the directory (403 otherwise), checked again on the file actually opened, so a
 * link swapped in between is caught; anything but a directory or a regular file (a FIFO, a
 * socket, a device) is a 403. 404 when nothing is there. Behind the server's authentication, as
 * every route but `/healthz`.
 */
export function hostLogsHandler(options: HostLogsOptions = {}): RouteHandler {
  const directory = options.directory ?? DEFAULT_HOST_LOG_DIRECTORY;
  return async (req, url): Promise<RouteAnswer | undefined> => {
    if (url.pathname !== '/logs' && !url.pathname.startsWith('/logs/')) return undefined;
    allow(req, 'GET');
    const segments = url.pathname
      .slice('/logs'.length)
      .split('/')
      .filter((s) => s !== '')
      .map((s) => segment(s));
    const root = await rootOf(directory);
    const shown = `/logs/${segments.join('/')}`;
    const { path, stats } = await locate(root, segments, shown);
    if (stats.isDirectory()) return { status: 200, contentType: 'text/plain; charset=utf-8', text: await listing(path) };
    return {
      status: 200,
      contentType: 'text/plain',
      open: async () => (await openConfined(root, path, shown)).createReadStream(),
    };
  };
}

function segment(raw: string): string {
  const decoded = decodePathSegment(raw);
  if (decoded === '.' || decoded === '..' || decoded.includes('/') || decoded.includes('\\') || decoded.includes('\0'))
    throw new HttpProblem(400, `path segment ${JSON.stringify(decoded.slice(0, 70))} is not allowed under /logs/`);
  return decoded;
}

async function rootOf(directory: string): Promise<string> {
  try {
    return await realpath(directory);
  } catch (error) {
    throw new HttpProblem(
      404,
      `the host log directory ${directory} cannot be read: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      [],
      {
        cause: error,
      },
    );
  }
}

function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/**
 * Where `segments` lead under `root`, links resolved, and what is there; a 404, or a 403 when it
 * leaves `root`. Resolved one name at a time, each link's target checked before anything beyond
 * it is looked at: a path that crosses the boundary is a 403 whether or not what lies past it
 * exists, so no answer tells whether a path outside exists (a link to `/proc/self/root` would
 * otherwise be an oracle for every path on the host).
 */
async function locate(root: string, segments: readonly string[], shown: string): Promise<{ path: string; stats: Stats }> {
  let path = root;
  const pending = [...segments];
  let links = 0;
  while (pending.length > 0) {
    const candidate = join(path, pending.shift()!);
    let found: Stats;
    try {
      found = await lstat(candidate);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new HttpProblem(404, `no such file or directory: ${shown}`, [], { cause: error });
      throw new HttpProblem(403, `${shown} cannot be read: ${code ?? 'error'}`, [], { cause: error });
    }
    if (!found.isSymbolicLink()) {
      path = candidate;
      continue;
    }
    // The kernel's own bound on links in one lookup (ELOOP).
    if (++links > 40) throw new HttpProblem(403, `${shown} cannot be read: ELOOP`);
    const target = resolve(path, await readlink(candidate));
    if (!inside(root, target)) throw new HttpProblem(403, `${shown} leads outside the host log directory`);
    // The target is walked again from the root: it may pass through links of its own.
    pending.unshift(
      ...relative(root, target)
        .split(sep)
        .filter((s) => s !== ''),
    );
    path = root;
  }
  const stats = await stat(path);
  if (!stats.isDirectory() && !stats.isFile()) throw new HttpProblem(403, `${shown} is not a regular file or a directory`);
  return { path, stats };
}

async function listing(path: string): Promise<string> {
  const entries = await readdir(path, { withFileTypes: true });
  return entries
    .map((e) => `${escapeName(e.name)}${e.isDirectory() ? '/' : ''}\n`)
    .sort()
    .join('');
}

/** A name as a path segment can ask for it: control characters (a newline would forge a line) and `%` percent-encoded. */
function escapeName(name: string): string {
  let out = '';
  for (const c of name) {
    const code = c.charCodeAt(0);
    out += code < 0x20 || code === 0x7f || c === '%' ? `%${code.toString(16).padStart(2, '0').toUpperCase()}` : c;
  }
  return out;
}

/**
 * Opens the regular file at `path` (already resolved and checked) for reading, and checks again
 * what was opened: never through a final link (`O_NOFOLLOW`), never blocking on a FIFO swapped in
 * (`O_NONBLOCK`), and the opened file's own path (`/proc/self/fd`) inside `root`.
 */
async function openConfined(root: string, path: string, shown: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw new HttpProblem(403, `${shown} cannot be opened: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, [], { cause: error });
  }
  try {
    const opened = await realpath(`/proc/self/fd/${handle.fd}`).catch(() => path);
    if (!inside(root, opened)) throw new HttpProblem(403, `${shown} leads outside the host log directory`);
    if (!(await handle.stat()).isFile()) throw new HttpProblem(403, `${shown} is not a regular file or a directory`);
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}
