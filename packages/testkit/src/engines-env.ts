import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * `scripts/engines.env` of this package: the engines' image names and socket paths, written once for the scripts
 * that start the engines (which `source` it) and for the suites (which read it here).
 */
export const ENGINES_ENV_FILE = fileURLToPath(new URL('../scripts/engines.env', import.meta.url));

let text: string | undefined;

/**
 * The file's values, resolved against `env` as bash resolves them when it sources the file: a
 * variable set in the environment wins where the file says `${NAME:-default}`.
 */
export function enginesEnv(env: NodeJS.ProcessEnv = process.env): Readonly<Record<string, string>> {
  text ??= readFileSync(ENGINES_ENV_FILE, 'utf8');
  return parseEnginesEnv(text, env);
}

/**
 * Reads `KEY=value` lines (blank lines and `#` comments skipped), expanding `${NAME}` and
 * `${NAME:-default}` from earlier lines, then from `env`. Anything else bash would read differently
 * (quotes, spaces, `$NAME`, other expansions) is refused rather than guessed at.
 */
export function parseEnginesEnv(source: string, env: NodeJS.ProcessEnv = {}): Record<string, string> {
  const values: Record<string, string> = {};
  const lookup = (name: string): string => values[name] ?? env[name] ?? '';
  source.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (match === null) throw new Error(`engines.env line ${index + 1}: not KEY=value: ${line}`);
    const [, key, value] = match as unknown as [string, string, string];
    try {
      values[key] = expand(value, lookup);
    } catch (error) {
      throw new Error(`engines.env line ${index + 1}: ${(error as Error).message}: ${line}`, { cause: error });
    }
  });
  return values;
}

function expand(value: string, lookup: (name: string) => string): string {
  let at = 0;
  const read = (end: string | undefined): string => {
    let out = '';
    while (at < value.length) {
      const c = value[at]!;
      if (c === end) return out;
      if (/[\s'"`\\]/.test(c)) throw new Error(`unsupported character ${JSON.stringify(c)}`);
      if (c !== '$') {
        out += c;
        at += 1;
        continue;
      }
      const ref = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(:-)?/.exec(value.slice(at));
      if (ref === null) throw new Error('only ${NAME} and ${NAME:-default} are supported');
      at += ref[0].length;
      const name = ref[1]!;
      if (ref[2] === undefined) {
        if (value[at] !== '}') throw new Error('only ${NAME} and ${NAME:-default} are supported');
        out += lookup(name);
      } else {
        const fallback = read('}');
        if (value[at] !== '}') throw new Error(`unclosed \${${name}:-`);
        out += lookup(name) || fallback;
      }
      at += 1;
    }
    if (end !== undefined) throw new Error(`unclosed \${`);
    return out;
  };
  return read(undefined);
}
