import { Command, Option } from 'commander';
import { listClaimVolumes, removeClaimVolume } from '@kubelet-ts/host-volumes';
import { DEFAULT_VOLUMES_ROOT } from '@kubelet-ts/runtime-docker';
import { AgentClientError } from './agent-client.js';
import { addConnectionOptions, openAgent, parseClientCommand, type ConnectionOptions } from './connection.js';
import { volumesRootOf } from './legacy-flags.js';
import { namespaceOf, type V1Pod } from './v1.js';

interface Io {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
}

interface VolumesOptions extends ConnectionOptions {
  readonly volumesRoot: string;
  readonly rootDir?: string;
  readonly force: boolean;
}

/** `kubelet-ts volumes`'s arguments and options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function volumesProgram(): Command {
  return addConnectionOptions(new Command('kubelet-ts volumes'))
    .description("list or remove the named volumes of pods' persistentVolumeClaims, and which pods of the running agent use them")
    .argument('<command>', 'ls, or rm')
    .argument('[claims...]', 'for rm: the claims whose volumes to remove')
    .addOption(new Option('--volumes-root <dir>', "the agent's volumes root").default(DEFAULT_VOLUMES_ROOT))
    .addOption(new Option('--root-dir <dir>', "the agent's directory: volumes in <dir>/volumes unless --volumes-root is given"))
    .addOption(
      new Option('-f, --force', 'rm: remove a claim even when a pod uses it, or when the agent cannot say whether one does').default(false),
    );
}

/**
 * `kubelet-ts volumes ls` / `volumes rm <claim>…`: the named volumes that v1
 * `persistentVolumeClaim`s became, on this host's disk (the agent's `--volumes-root`, or
 * `--root-dir`/volumes). They outlive their pods, as `podman volume` keeps them: this is the one
 * way they go. A claim that a pod of the running agent names is not removed unless `--force`
 * (Kubernetes' pvc-protection finalizer, `podman volume rm` without `-f`), and when the agent
 * cannot be asked, none is. A removed claim's next pod starts with an empty one. Exits 1 when a
 * claim was not removed.
 */
export async function volumesMain(argv: readonly string[], io: Io): Promise<number> {
  const program = volumesProgram();
  const ended = parseClientCommand(program, argv, io);
  if (ended !== undefined) return ended;
  const [command, claims = []] = program.processedArgs as [string, string[]];
  const options = program.opts<VolumesOptions>();
  const root = volumesRootOf(options, program.getOptionValueSource('volumesRoot') === 'cli');
  if (command === 'ls') return list(root, options, io);
  if (command !== 'rm' || claims.length === 0) {
    io.stderr.write(`kubelet-ts volumes: say ls, or rm and the claims to remove (got ${[command, ...claims].join(' ')})\n`);
    return 1;
  }
  return remove(root, claims, options, io);
}

/** Each claim's volume, with the pods that use it, or `?` where the agent could not be asked (said on stderr). */
async function list(root: string, options: VolumesOptions, io: Io): Promise<number> {
  const names = await listClaimVolumes(root);
  if (names.length === 0) {
    io.stdout.write(`no claim volumes under ${root}\n`);
    return 0;
  }
  const users = await claimUsers(options, io);
  if (users instanceof AgentClientError) io.stderr.write(`kubelet-ts volumes: which pods use each claim is not known: ${users.message}\n`);
  const width = Math.max('CLAIM'.length, ...names.map((n) => n.length)) + 3;
  const rows = names.map((name) => {
    const using = users instanceof AgentClientError ? '?' : (users.get(name) ?? []).join(',') || '<none>';
    return `${name.padEnd(width)}${using}`;
  });
  io.stdout.write(`${['CLAIM'.padEnd(width) + 'USED BY', ...rows].join('\n')}\n`);
  return 0;
}

async function remove(root: string, claims: readonly string[], options: VolumesOptions, io: Io): Promise<number> {
  const users = await claimUsers(options, io);
  let kept = 0;
  for (const claim of claims) {
    const refusal =
      options.force || !(users instanceof AgentClientError || users.has(claim))
        ? undefined
        : users instanceof AgentClientError
          ? `claim ${JSON.stringify(claim)} not removed: whether a pod uses it is not known (${users.message}); --force removes it anyway`
          : `claim ${JSON.stringify(claim)} is in use by pod ${users.get(claim)!.join(', pod ')}: delete the pod first, or --force`;
    if (refusal !== undefined) {
      kept++;
      io.stderr.write(`kubelet-ts volumes: ${refusal}\n`);
    } else if (await removeClaimVolume(root, claim)) io.stdout.write(`removed ${claim}\n`);
    else {
      kept++;
      io.stderr.write(`kubelet-ts volumes: no volume of claim ${JSON.stringify(claim)} under ${root}\n`);
    }
  }
  return kept === 0 ? 0 : 1;
}

/**
 * The pods of the running agent that name each claim (`namespace/name`), from its `/pods`; a pod
 * that has ended (Succeeded, Failed) holds none, as the pvc-protection controller counts it. The
 * agent's answer, or why it could not be had.
 */
async function claimUsers(options: VolumesOptions, io: Io): Promise<Map<string, string[]> | AgentClientError> {
  try {
    const { client } = await openAgent(options, io.env);
    const list = (await client.json('/pods')) as { items?: V1Pod[] };
    const users = new Map<string, string[]>();
    for (const pod of list.items ?? []) {
      const phase = pod.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      for (const volume of pod.spec?.volumes ?? []) {
        const claim = volume.persistentVolumeClaim?.claimName;
        if (claim === undefined) continue;
        users.set(claim, [...(users.get(claim) ?? []), `${namespaceOf(pod)}/${pod.metadata.name}`]);
      }
    }
    return users;
  } catch (error) {
    if (error instanceof AgentClientError) return error;
    throw error;
  }
}
