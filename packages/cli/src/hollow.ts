import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiServices, ClusterNode, PodFeed, firstMachineAddress } from '@kubelet-ts/cluster';
import { hostAccessOf, type Logger, type NodeAllocatable } from '@kubelet-ts/core';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { KubeConfig } from '@kubernetes/client-node';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { createLogger } from './logging.js';

/** What each hollow node offers the scheduler (kubemark's hollow nodes offer the same kind of figures). */
const HOLLOW_ALLOCATABLE: NodeAllocatable = { cpuMillis: 4_000, memoryBytes: 16 * 1024 ** 3, pods: 110 };

interface HollowOptions {
  readonly nodes: number;
  readonly kubeconfig: string;
  readonly namePrefix: string;
  readonly nodeIp?: string;
  readonly startConcurrency: number;
  readonly logLevel: string;
}

/** `kubelet-ts hollow`'s options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function hollowProgram(): Command {
  return new Command('kubelet-ts hollow')
    .description(
      "run N nodes of a cluster in one process on the in-memory runtime (kubemark's hollow nodes): each a full agent — its Node, Lease, API pod source, status writer and the real pod logic — to test a control plane at scale",
    )
    .addOption(new Option('--nodes <n>', 'how many nodes').argParser(count).makeOptionMandatory())
    .addOption(
      new Option(
        '--kubeconfig <path>',
        'the cluster, and credentials that may act for every node (the Node authorizer lets a node act only for itself: give a user that may, such as an admin)',
      ).makeOptionMandatory(),
    )
    .addOption(new Option('--name-prefix <prefix>', 'the nodes are <prefix><i>, i from 0').default('hollow-'))
    .addOption(
      new Option('--node-ip <ip>', "the nodes' InternalIP (nothing serves their port)").default(
        undefined,
        "the host's first non-loopback IPv4 address",
      ),
    )
    .addOption(new Option('--start-concurrency <n>', 'nodes started at once').argParser(count).default(20))
    .addOption(new Option('--log-level <level>', 'of every node').default('warn'));
}

/**
 * `kubelet-ts hollow --nodes N --kubeconfig PATH [--name-prefix hollow-]`: N agents, each a node of
 * the cluster (`ClusterNode` beside a `Kubelet` on its own `MemoryRuntime`), sharing one kubeconfig
 * read once, one watch of the bound pods fanned out by node name (`PodFeed`) and one of the Services; started `--start-concurrency` at a time, all closed on SIGINT or SIGTERM (their Nodes
 * are left, as a kubelet leaves its own). Their port is not served.
 */
export async function hollowMain(argv: readonly string[]): Promise<number> {
  const program = hollowProgram()
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  try {
    program.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1;
    throw error;
  }
  const options = program.opts<HollowOptions>();
  const logger = createLogger({ level: options.logLevel });
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromFile(options.kubeconfig);
  } catch (error) {
    process.stderr.write(`kubelet-ts hollow: cannot read the kubeconfig ${options.kubeconfig}: ${(error as Error).message}\n`);
    return 1;
  }
  const fsPath = await mkdtemp(join(tmpdir(), 'kubelet-ts-hollow-'));
  const fleet = new HollowFleet({ ...options, kubeConfig, fsPath, logger });
  const signalled = new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  try {
    const started = Date.now();
    await Promise.race([fleet.start(), signalled]);
    logger.info({ nodes: fleet.size, ms: Date.now() - started }, `${fleet.size} hollow nodes started`);
    await signalled;
  } finally {
    await fleet.close();
    await rm(fsPath, { recursive: true, force: true });
  }
  return 0;
}

export interface HollowFleetOptions {
  readonly nodes: number;
  readonly namePrefix: string;
  readonly kubeConfig: KubeConfig;
  readonly nodeIp?: string;
  readonly startConcurrency?: number;
  /** The nodes' file system (their ephemeral storage figures). */
  readonly fsPath: string;
  readonly logger: Logger;
}

/** N hollow nodes in this process (see `hollowMain`); embedders and the bench use it directly. */
export class HollowFleet {
  private readonly nodes: Array<{ readonly kubelet: Kubelet; readonly cluster: ClusterNode }> = [];
  private closed = false;
  /** One watch of the bound pods and one of the Services for every node (N watches were N connections). */
  private readonly podFeed: PodFeed;
  private readonly services: ApiServices;

  constructor(private readonly options: HollowFleetOptions) {
    this.podFeed = new PodFeed({ kubeConfig: options.kubeConfig, logger: options.logger });
    this.services = new ApiServices({ kubeConfig: options.kubeConfig, logger: options.logger });
  }

  get size(): number {
    return this.nodes.length;
  }

  /** Starts every node, `startConcurrency` at a time; resolves once each has started (its Node registers in the background). */
  async start(): Promise<void> {
    const { nodes, startConcurrency = 20 } = this.options;
    let next = 0;
    const worker = async () => {
      while (!this.closed && next < nodes) await this.startOne(next++);
    };
    await Promise.all(Array.from({ length: Math.min(startConcurrency, nodes) }, worker));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.nodes.map(async ({ kubelet, cluster }) => {
        await cluster.close();
        await kubelet.close();
      }),
    );
    this.podFeed.close();
    this.services.close();
  }

  /** The nodes' InternalIP: `nodeIp`, else this machine's first address. */
  private address(): string {
    const address = this.options.nodeIp ?? firstMachineAddress();
    if (address === undefined) throw new Error('this machine has no address but loopback: give --node-ip');
    return address;
  }

  private async startOne(i: number): Promise<void> {
    const { namePrefix, kubeConfig, fsPath, logger } = this.options;
    const name = `${namePrefix}${i}`;
    const nodeLogger = logger.child({ node: name });
    const runtime = new MemoryRuntime({ pullable: 'any' });
    const access = hostAccessOf({ allowHostNetwork: true, allowHostMounts: false, allowPrivileged: true });
    const cluster = new ClusterNode({
      ...access,
      kubeconfigPath: '',
      kubeConfig,
      podFeed: this.podFeed,
      services: this.services,
      nodeName: name,
      address: this.address(),
      port: 10250,
      labels: { 'kubelet-ts.io/hollow': 'true' },
      allocatable: HOLLOW_ALLOCATABLE,
      fsPath,
      containerRuntimeVersion: 'memory://0.1.0',
      logger: nodeLogger,
    });
    const kubelet = createKubelet({
      runtime,
      sources: [cluster.source],
      logger: nodeLogger,
      hostname: name,
      allocatable: HOLLOW_ALLOCATABLE,
      ...access,
    });
    this.nodes.push({ kubelet, cluster });
    await kubelet.start();
    await cluster.start(kubelet);
  }
}

function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${JSON.stringify(value)}: a whole number of at least 1`);
  return n;
}
