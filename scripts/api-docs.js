// The published packages' API: their reports (docs/api-reports/*.api.md, committed: a change to a
// package's surface shows in review) and their reference (docs/api/, built, not committed).
//
//   node scripts/api-docs.js check    a report that differs from the committed one, an exported
//                                     symbol without a doc comment, or a broken {@link} fails
//   node scripts/api-docs.js update   rewrites the reports (then review and commit them)
//   node scripts/api-docs.js docs     the check's findings, and the markdown reference in docs/api/
//
// It reads the packages' emitted .d.ts files: run `tsc -b` first (the npm scripts do).
//
// API Extractor, not TypeDoc: the repository compiles with TypeScript 7 (the native compiler), whose
// npm package has no JavaScript compiler API. TypeDoc needs that API from a `typescript` peer
// dependency of 5.x or 6.0, which would clash with the root's 7; API Extractor depends on a pinned
// TypeScript 6.0 of its own (nested under it), and reads .d.ts files, which 7 emits as 6 reads them.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CompilerState, Extractor, ExtractorConfig, ExtractorLogLevel } from '@microsoft/api-extractor';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const reportFolder = join(root, 'docs/api-reports');
const modelFolder = join(root, 'node_modules/.cache/api-docs/model');
const tempFolder = join(root, 'node_modules/.cache/api-docs/reports');
const referenceFolder = join(root, 'docs/api');

const mode = process.argv[2] ?? 'check';
if (!['check', 'update', 'docs'].includes(mode)) {
  console.error('usage: node scripts/api-docs.js check|update|docs');
  process.exit(2);
}

/** Every entry point of every workspace package that is published (not private). */
function entryPoints() {
  const points = [];
  for (const parent of ['packages', 'adapters']) {
    for (const name of readdirSync(join(root, parent)).sort()) {
      const folder = join(root, parent, name);
      const packageJsonPath = join(folder, 'package.json');
      if (!existsSync(packageJsonPath)) continue;
      const packageJson = JSON.parse(readFileSync(packageJsonPath, 'utf8'));
      if (packageJson.private) continue;
      const unscoped = packageJson.name.replace(/^@[^/]+\//, '');
      for (const [subpath, target] of Object.entries(packageJson.exports ?? { '.': { types: packageJson.types } })) {
        const types = typeof target === 'string' ? target : target.types;
        const suffix = subpath === '.' ? '' : `-${subpath.slice(2).replaceAll('/', '-')}`;
        points.push({
          folder,
          packageJsonPath,
          packageJson,
          // A subpath's report and model are its own, named after the package and the subpath.
          name: unscoped + suffix,
          packageName: packageJson.name + suffix,
          dts: join(folder, types),
        });
      }
    }
  }
  return points;
}

/** What API Extractor is told for one entry point (api-extractor.json's content, for each package alike). */
function configOf(point) {
  return {
    projectFolder: point.folder,
    mainEntryPointFilePath: point.dts,
    compiler: {
      // The packages' own compiler settings, for a program of .d.ts files only.
      overrideTsconfig: {
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2023'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          exactOptionalPropertyTypes: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files: [point.dts],
      },
    },
    apiReport: {
      enabled: true,
      reportFileName: point.name,
      reportFolder,
      reportTempFolder: tempFolder,
    },
    docModel: { enabled: true, apiJsonFilePath: join(modelFolder, `${point.name}.api.json`) },
    dtsRollup: { enabled: false },
    tsdocMetadata: { enabled: false },
    messages: {
      compilerMessageReporting: { default: { logLevel: 'warning' } },
      extractorMessageReporting: {
        default: { logLevel: 'warning' },
        // Everything a package exports is public: there are no @alpha/@beta/@internal tiers to tag.
        'ae-missing-release-tag': { logLevel: 'none' },
        'ae-undocumented': { logLevel: 'warning', addToApiReportFile: false },
        'ae-unresolved-link': { logLevel: 'warning', addToApiReportFile: false },
        'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: true },
      },
      tsdocMessageReporting: { default: { logLevel: 'warning' } },
    },
  };
}

const points = entryPoints();
for (const point of points) {
  if (!existsSync(point.dts)) {
    console.error(`${relative(root, point.dts)} is missing: run \`npx tsc -b\` first`);
    process.exit(1);
  }
}
mkdirSync(reportFolder, { recursive: true });
rmSync(modelFolder, { recursive: true, force: true });

const started = Date.now();
const sourceLines = new Map();
const configs = points.map((point) =>
  ExtractorConfig.prepare({
    configObject: configOf(point),
    configObjectFullPath: join(point.folder, 'api-extractor.json'),
    packageJsonFullPath: point.packageJsonPath,
    // API Extractor and API Documenter take one entry point per package, and a package's name only:
    // a subpath (`@kubelet-ts/source-server/pod-printing`) is named `@kubelet-ts/source-server-pod-printing`.
    packageJson: { ...point.packageJson, name: point.packageName },
  }),
);
// One program for every package: each run reads the same .d.ts files, so they are parsed once.
const compilerState = CompilerState.create(configs[0], { additionalEntryPoints: points.map((p) => p.dts) });

const findings = [];
const undocumentedMembers = new Map();
const changed = [];
for (const [index, config] of configs.entries()) {
  const point = points[index];
  const result = Extractor.invoke(config, {
    localBuild: mode === 'update',
    compilerState,
    messageCallback(message) {
      message.handled = true;
      if (message.logLevel === ExtractorLogLevel.None || message.logLevel === ExtractorLogLevel.Verbose) return;
      if (message.logLevel === ExtractorLogLevel.Info) return;
      // The report's own "API changed" and "report missing" warnings: said once, below.
      if (message.category === 'console' && message.logLevel === ExtractorLogLevel.Warning) return;
      if (message.messageId === 'ae-undocumented' && isMember(message)) {
        undocumentedMembers.set(point.name, (undocumentedMembers.get(point.name) ?? 0) + 1);
        return;
      }
      const where = message.sourceFilePath
        ? `${relative(root, message.sourceFilePath)}:${message.sourceFileLine}:${message.sourceFileColumn}`
        : point.name;
      findings.push({ id: message.messageId, where, text: message.text });
    },
  });
  if (result.apiReportChanged && mode !== 'update') changed.push(`docs/api-reports/${point.name}.api.md`);
}

// A report whose package is gone (or now private) is stale.
const reportNames = new Set(points.map((p) => `${p.name}.api.md`));
for (const file of readdirSync(reportFolder)) {
  if (!file.endsWith('.api.md') || reportNames.has(file)) continue;
  if (mode === 'update') rmSync(join(reportFolder, file));
  else changed.push(`docs/api-reports/${file} (no published package has it)`);
}

// The reference, from the doc model: also where a {@link} to another package is resolved.
const documenter = join(root, 'node_modules/@microsoft/api-documenter/bin/api-documenter');
const output = mode === 'docs' ? referenceFolder : join(root, 'node_modules/.cache/api-docs/api');
rmSync(output, { recursive: true, force: true });
const documenterLog = execFileSync(process.execPath, [documenter, 'markdown', '-i', modelFolder, '-o', output], {
  encoding: 'utf8',
  env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
});
// API Extractor resolves a package's links to itself (with the file and line); a link to another
// package (`{@link @kubelet-ts/core#ContainerRuntime}`) is resolved only here, where every model is.
const documenterFindings = new Set();
for (const line of documenterLog.replaceAll(/\x1b\[[0-9;]*m/g, '').split('\n')) {
  if (!/WARNING|Error/.test(line)) continue;
  const reference = /Unable to resolve reference "([^"]*)"/.exec(line)?.[1];
  if (reference === undefined || reference.includes('#')) documenterFindings.add(line.trim());
}
for (const text of documenterFindings) findings.push({ id: 'api-documenter', where: 'a link to another package', text });

const byKind = new Map();
for (const f of findings) byKind.set(f.id ?? 'other', [...(byKind.get(f.id ?? 'other') ?? []), f]);
for (const [id, list] of byKind) {
  console.error(`\n${id === 'ae-undocumented' ? 'exported without a doc comment' : id} (${list.length})`);
  for (const f of list) console.error(`  ${f.where}: ${f.text}`);
}
if (changed.length > 0) {
  console.error(
    `\nThe API differs from the committed report:\n  ${changed.join('\n  ')}\n` +
      'If the change is meant, run `npm run api:update` and commit the reports with it.',
  );
}
const members = [...undocumentedMembers.values()].reduce((a, b) => a + b, 0);
const seconds = ((Date.now() - started) / 1000).toFixed(1);
console.log(
  `api: ${points.length} entry points, ${findings.length} findings, ${changed.length} reports differ` +
    ` (${members} members without a doc comment, marked "(undocumented)" in the reports); ${seconds} s` +
    (mode === 'update' ? '; reports written to docs/api-reports/' : '') +
    (mode === 'docs' ? `; reference in ${relative(root, referenceFolder)}/index.md` : ''),
);
process.exit(findings.length > 0 || changed.length > 0 ? 1 : 0);

/**
 * Whether an `ae-undocumented` message is about a member (a field, method or enum member) rather
 * than an exported declaration: members are indented in the formatted source, declarations are not.
 */
function isMember(message) {
  if (!message.sourceFilePath || !message.sourceFileLine) return false;
  let lines = sourceLines.get(message.sourceFilePath);
  if (!lines) {
    lines = readFileSync(message.sourceFilePath, 'utf8').split('\n');
    sourceLines.set(message.sourceFilePath, lines);
  }
  return /^\s/.test(lines[message.sourceFileLine - 1] ?? '');
}
