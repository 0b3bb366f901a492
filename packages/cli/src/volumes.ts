import { Command, CommanderError, Option } from 'commander';
import { listClaimVolumes, removeClaimVolume } from '@kubelet-ts/host-volumes';
import { DEFAULT_VOLUMES_ROOT } from '@kubelet-ts/runtime-docker';
import { volumesRootOf } from './legacy-flags.js';

interface Io {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/**
 * `kubelet-ts volumes ls` / `volumes rm <claim>…`: the named volumes that v1
 * `persistentVolumeClaim`s became, on this host's disk (the agent's `--volumes-root`, or
 * `--root-dir`/volumes). They outlive their pods, as `podman volume` keeps them: this is the one
 * way they go. A removed claim's next pod starts with an empty one. Exits 1 when a named claim
 * has no volume.
 */
export async function volumesMain(argv: readonly string[], io: Io): Promise<number> {
  const program = new Command('kubelet-ts volumes')
    .description("list or remove the named volumes of pods' persistentVolumeClaims")
    .argument('<command>', 'ls, or rm')
    .argument('[claims...]', 'for rm: the claims whose volumes to remove')
    .addOption(new Option('--volumes-root <dir>', "the agent's volumes root").default(DEFAULT_VOLUMES_ROOT))
    .addOption(new Option('--root-dir <dir>', "the agent's directory: volumes in <dir>/volumes unless --volumes-root is given"))
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
  try {
    program.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1;
    throw error;
  }
  const [command, claims = []] = program.processedArgs as [string, string[]];
  const options = program.opts<{ volumesRoot: string; rootDir?: string }>();
  const root = volumesRootOf(options, program.getOptionValueSource('volumesRoot') === 'cli');
  if (command === 'ls') {
    const names = await listClaimVolumes(root);
    io.stdout.write(names.length === 0 ? `no claim volumes under ${root}\n` : `${['CLAIM', ...names].join('\n')}\n`);
    return 0;
  }
  if (command !== 'rm' || claims.length === 0) {
    io.stderr.write(`kubelet-ts volumes: say ls, or rm and the claims to remove (got ${[command, ...claims].join(' ')})\n`);
    return 1;
  }
  let missing = 0;
  for (const claim of claims) {
    if (await removeClaimVolume(root, claim)) io.stdout.write(`removed ${claim}\n`);
    else {
      missing++;
      io.stderr.write(`kubelet-ts volumes: no volume of claim ${JSON.stringify(claim)} under ${root}\n`);
    }
  }
  return missing === 0 ? 0 : 1;
}
