import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { stringify } from 'yaml';
import { derivedManifestId, isKubeletError, type ContainerManifest } from '@kubelet-ts/core';
import { isFromV1Pod, parseManifests, rejectionError, toV1Pod, toV1beta1 } from '@kubelet-ts/manifest';

type Format = 'v1' | 'v1beta1';

/** `kubelet-ts convert`'s arguments and options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function convertProgram(): Command {
  return new Command('kubelet-ts convert')
    .description('convert manifests between the 2014 format (v1beta1) and Kubernetes v1 Pods, printing YAML')
    .argument('<file>', 'the manifest file, or - for standard input')
    .addOption(new Option('--to <format>', 'the format to write; default: the other one of each manifest').choices(['v1', 'v1beta1']));
}

/**
 * `kubelet-ts convert [--to v1|v1beta1] <file|->`: reads one text of manifests in either format
 * (YAML or JSON, one or many, `---` documents or lists) and prints each converted to YAML, as
 * `---` documents. Without `--to`, each manifest goes to the format it is not written in. Exits 1,
 * printing nothing to stdout, when the text is unreadable, a manifest is refused, or one cannot be
 * said in the target format; every reason goes to stderr with its field path.
 */
export async function convertMain(argv: readonly string[]): Promise<number> {
  const program = convertProgram()
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  try {
    program.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1;
    throw error;
  }
  const [file = '-'] = program.args;
  const to = program.opts<{ to?: Format }>().to;
  const fail = (message: string): number => {
    process.stderr.write(`kubelet-ts convert: ${message}\n`);
    return 1;
  };
  let text: Buffer;
  try {
    text = file === '-' ? await readStdin() : await readFile(file);
  } catch (error) {
    return fail(`cannot read ${file}: ${(error as Error).message}`);
  }
  const origin = file === '-' ? 'stdin' : file;
  // Nothing runs here, so host paths are converted as written; the agent checks them when it reads the result.
  const parsed = parseManifests(text, origin, {
    allowHostMounts: true,
    allowHostNetwork: true,
    idFor: (position) => derivedManifestId(basename(origin), origin, position),
  });
  if (parsed.unreadable !== undefined) return fail(parsed.unreadable.message);
  // An empty text is not a conversion of nothing: a script piping the wrong file must hear of it.
  if (parsed.manifests.length === 0 && parsed.rejected.length === 0)
    return fail(`no manifest in ${origin}: nothing to convert (give a 2014 manifest or a v1 Pod)`);
  const problems = parsed.rejected.map((r) => rejectionError(r).message);
  const documents: string[] = [];
  for (const manifest of parsed.manifests) {
    try {
      documents.push(stringify(convert(manifest, to ?? (isFromV1Pod(manifest) ? 'v1beta1' : 'v1')), { aliasDuplicateObjects: false }));
    } catch (error) {
      if (!isKubeletError(error, 'InvalidManifest')) throw error;
      problems.push(
        `${origin} (id "${manifest.id}") cannot be written as v1beta1: ${error.fieldErrors.map((f) => `${f.path}: ${f.message}`).join('; ')}`,
      );
    }
  }
  if (problems.length > 0) return fail(problems.join('\nkubelet-ts convert: '));
  process.stdout.write(documents.join('---\n'));
  return 0;
}

function convert(manifest: ContainerManifest, to: Format): object {
  return to === 'v1' ? toV1Pod(manifest) : toV1beta1(manifest);
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
