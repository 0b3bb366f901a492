import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { REGENERATE, cliReference, spliceReference } from '../src/cli-reference.js';
import { buildProgram } from '../src/options.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const bin = fileURLToPath(new URL('../bin/kubelet-ts.js', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');
/** The README and every page of docs/ (not the generated API reports below it). */
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const corpus = pages.map(read).join('\n');

/** Each command as a user types it, for `--help`. */
const COMMANDS = ['', 'plan', 'get', 'describe', 'logs', 'exec', 'attach', 'port-forward', 'top', 'convert', 'volumes'];

/** Markdown without its fenced code blocks, where a `[x](y)` is not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading = ''] of prose(markdown).matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replaceAll(' ', '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

describe('docs/CLI.md', () => {
  it('holds the reference the CLI generates now', () => {
    const page = read('docs/CLI.md');
    const expected = spliceReference(page, cliReference());
    if (expected !== page) {
      const [a, b] = [page.split('\n'), expected.split('\n')];
      const line = a.findIndex((l, i) => l !== b[i]);
      throw new Error(
        `docs/CLI.md's reference is out of date with the commander definitions: run \`${REGENERATE}\` and commit the page.\n` +
          `First difference, line ${line + 1}:\n  page: ${a[line]}\n  now:  ${b[line]}`,
      );
    }
  });

  it("names every option that the built command's --help prints, as --help spells it", async () => {
    const run = promisify(execFile);
    const helps = await Promise.all(
      COMMANDS.map(async (command) => ({
        command,
        text: (await run(process.execPath, [bin, ...(command === '' ? [] : [command]), '--help'])).stdout,
      })),
    );
    const page = read('docs/CLI.md');
    const missing: string[] = [];
    let options = 0;
    for (const { command, text } of helps) {
      const section = text.slice(text.indexOf('\nOptions:\n'));
      for (const [, term = ''] of section.matchAll(/^ {2}(-\S.*?)(?: {2,}|$)/gm)) {
        options++;
        if (!page.includes(`\`${term}\``)) missing.push(`kubelet-ts ${command} ${term}`.replace('  ', ' '));
      }
    }
    expect({ missing, options: options > 150 }).toEqual({ missing: [], options: true });
  });

  it('explains only flags the agent takes', () => {
    const page = read('docs/CLI.md');
    const table = page.slice(page.indexOf("## The agent's flags, explained"), page.indexOf('## Running the agent'));
    const known = new Set(buildProgram().options.map((o) => o.long));
    const explained = [...table.matchAll(/^\| `(--[a-z-]+)/gm)].map((m) => m[1]);
    expect(explained.length).toBeGreaterThan(50);
    expect(explained.filter((flag) => !known.has(flag))).toEqual([]);
  });
});

describe('the README and docs/', () => {
  it('keep the README a front door, under 300 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThan(300);
  });

  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target = ''] of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? join(root, page) : resolve(dirname(join(root, page)), path);
        if (!existsSync(file)) broken.push(`${page}: ${target} (no such file)`);
        else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${page}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('document every flag, route and v1 field the README documented before it was split', () => {
    const before = JSON.parse(read('packages/cli/test/fixtures/readme-before-docs.json')) as {
      flags: string[];
      routes: string[];
      fields: string[];
    };
    const missing = [
      ...before.flags.filter((flag) => !new RegExp(`(?<![\\w-])${flag}(?!\\w|-\\w)`).test(corpus)),
      ...before.routes.filter((route) => !corpus.includes(route)),
      ...before.fields.filter((field) => !corpus.includes(`\`${field}`)),
    ];
    expect(missing).toEqual([]);
    expect([before.flags.length, before.routes.length, before.fields.length]).toEqual([118, 31, 147]);
  });
});
