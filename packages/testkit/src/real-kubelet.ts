import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { assertContainerd, criEndpoint } from './containerd.js';
import { buildControlPlane } from './control-plane-binaries.js';
import type { StartedControlPlane } from './control-plane.js';
import { freePort } from './etcd-server.js';

const run = promisify(execFile);

/** Where `startRealKubelet` runs the kubelet: the cluster it joins, its name and address, its runtime. */
export interface RealKubeletOptions {
  /** The control plane it joins (with a node kubeconfig of `system:node:<nodeName>`). */
  readonly cluster: StartedControlPlane;
  readonly nodeName: string;
  /** `--node-ip`: this machine's address (the kubelet refuses loopback; the API server reaches it there). */
  readonly nodeIp: string;
  /** The CRI endpoint (default: the private containerd's, `criEndpoint()`). */
  readonly criEndpoint?: string;
  /** Where its output goes, line by line (default: kept, the last 200 lines in `output()`). */
  readonly log?: (line: string) => void;
}

/** A started kubelet: its process, its port, what it printed, and `stop()`. */
export interface StartedRealKubelet {
  readonly process: ChildProcess;
  readonly pid: number;
  /** Its port (`--port`): what the API server dials for logs, exec and port-forward. */
  readonly port: number;
  /** The release it reports (`v1.37.2`). */
  readonly release: string;
  /** The last lines it printed. */
  output(): string[];
  /** Stops it (SIGTERM, then SIGKILL after 10 s) and takes back what it made on the host (see `startRealKubelet`). */
  stop(): Promise<void>;
}

/**
 * The real kubelet, built from source at the control plane's release (`control-plane/build.sh`
 * builds it beside the control plane), as a process of this host against the private containerd,
 * registered with `cluster` as `nodeName`: the reference that kubelet-ts is measured beside. Its
 * configuration is a kubeadm node's where this VM allows (see docs/TESTING.md, "The real kubelet
 * beside it"): `cgroupDriver: cgroupfs` (no systemd here), `failCgroupV1: false` and
 * `failSwapOn: false` (a cgroup v1 VM with swap), `enforceNodeAllocatable: []`, webhook authentication and
 * authorization with the cluster's CA, no read-only port; and so that it changes nothing of this
 * machine's beyond what it is given: its root, certificates, pod logs and volume plugins in a temp
 * folder, no image garbage collection (it would remove the suites' images) and no eviction
 * thresholds. `stop()` removes that folder, its cgroups (`/kubepods` in each hierarchy) and the
 * iptables chains it added (`KUBE-FIREWALL`, its canaries: any `KUBE-*` chain not there before),
 * and the folders it made at fixed paths (`/var/lib/kubelet/device-plugins`, `/var/log/containers`). Its pods are not stopped by a kubelet that exits: delete them through the API
 * (and wait until they are gone) before `stop()`. Needs root, as the kubelet does.
 */
export async function startRealKubelet(options: RealKubeletOptions): Promise<StartedRealKubelet> {
  const endpoint = options.criEndpoint ?? criEndpoint();
  await assertContainerd(endpoint);
  const binaries = await buildControlPlane();
  const binary = join(binaries.dir, 'kubelet');
  if (!existsSync(binary))
    throw new Error(`no kubelet at ${binary}: control-plane/build.sh builds it with the control plane (npm test runs it first)`);
  // The kubelet adds iptables chains of its own (KUBE-FIREWALL, its canaries): those that were not
  // there before it are taken back at stop.
  const chainsBefore = await kubeChains();
  // And folders at paths it does not let one choose: those it makes are removed at stop.
  const made = FIXED_PATHS.filter((p) => !existsSync(p));
  const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-real-kubelet-'));
  const [port, healthzPort] = [await freePort(), await freePort()];
  const config = join(dir, 'config.yaml');
  await writeFile(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      'cgroupDriver: cgroupfs',
      'failCgroupV1: false',
      'failSwapOn: false',
      'enforceNodeAllocatable: []',
      `containerRuntimeEndpoint: ${JSON.stringify(endpoint)}`,
      'address: 0.0.0.0',
      `port: ${port}`,
      'readOnlyPort: 0',
      'healthzBindAddress: 127.0.0.1',
      `healthzPort: ${healthzPort}`,
      'authentication:',
      '  anonymous: { enabled: false }',
      '  webhook: { enabled: true }',
      `  x509: { clientCAFile: ${JSON.stringify(options.cluster.ca.certFile)} }`,
      'authorization: { mode: Webhook }',
      `podLogsDir: ${JSON.stringify(join(dir, 'pod-logs'))}`,
      `volumePluginDir: ${JSON.stringify(join(dir, 'volume-plugins'))}`,
      'imageGCHighThresholdPercent: 100',
      'imageGCLowThresholdPercent: 99',
      'evictionHard: { memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%" }',
      'serializeImagePulls: false',
      '',
    ].join('\n'),
  );
  const kubeconfig = await options.cluster.nodeKubeconfig(options.nodeName);
  const lines: string[] = [];
  const child = spawn(
    binary,
    [
      `--config=${config}`,
      `--kubeconfig=${kubeconfig}`,
      `--root-dir=${join(dir, 'root')}`,
      `--cert-dir=${join(dir, 'pki')}`,
      `--node-ip=${options.nodeIp}`,
      `--hostname-override=${options.nodeName}`,
      '--v=1',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) {
      options.log?.(line);
      lines.push(line);
    }
    lines.splice(0, Math.max(0, lines.length - 200));
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(killer);
      }
      await removeKubeletCgroups();
      await removeChainsSince(chainsBefore);
      for (const path of made) await rm(path, { recursive: true, force: true });
      // Its pods' volumes may be mounted under its root (tmpfs for Secrets): unmounted first.
      await unmountUnder(dir);
      await rm(dir, { recursive: true, force: true });
    })();
    return stopped;
  };
  // Up once its healthz answers; an early exit fails with what it said.
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`the kubelet exited at start (${child.exitCode ?? child.signalCode}): ${lines.slice(-15).join('\n')}`);
    }
    const healthy = await fetch(`http://127.0.0.1:${healthzPort}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the kubelet's healthz did not answer within 60 s: ${lines.slice(-15).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { process: child, pid: child.pid!, port, release: binaries.release, output: () => [...lines], stop };
}

/** `/kubepods` (cgroupfs, cgroup v1 or v2): each hierarchy's tree, deepest first (a cgroup goes once it is empty). */
async function removeKubeletCgroups(): Promise<void> {
  const base = '/sys/fs/cgroup';
  const roots = existsSync(join(base, 'cgroup.controllers'))
    ? [join(base, 'kubepods')]
    : (await readdir(base).catch(() => [] as string[])).map((h) => join(base, h, 'kubepods'));
  for (const root of roots) await removeTree(root);
}

async function removeTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
  if (entries === undefined) return;
  for (const e of entries) if (e.isDirectory()) await removeTree(join(dir, e.name));
  await rmdir(dir).catch(() => undefined);
}

const TABLE_TOOLS = ['iptables', 'ip6tables'] as const;

/**
 * What the kubelet makes at fixed paths, whatever its root: the device plugins' socket folder
 * (`/var/lib/kubelet/device-plugins`, a constant of its device manager) and the container log
 * links (`/var/log/containers`). Deepest first.
 */
const FIXED_PATHS = ['/var/lib/kubelet/device-plugins', '/var/lib/kubelet', '/var/log/containers'];

/** The `KUBE-*` chains of each table, as `<tool> <table> <chain>`. */
async function kubeChains(): Promise<Set<string>> {
  const chains = new Set<string>();
  for (const tool of TABLE_TOOLS) {
    const saved = await run(`${tool}-save`, []).then(
      (r) => r.stdout,
      () => '',
    );
    let table = '';
    for (const line of saved.split('\n')) {
      if (line.startsWith('*')) table = line.slice(1);
      const chain = /^:(KUBE-\S+) /.exec(line)?.[1];
      if (chain !== undefined) chains.add(`${tool} ${table} ${chain}`);
    }
  }
  return chains;
}

/** Removes each `KUBE-*` chain that is not in `before`: the rules that jump to it first, then it. */
async function removeChainsSince(before: ReadonlySet<string>): Promise<void> {
  for (const entry of await kubeChains()) {
    if (before.has(entry)) continue;
    const [tool, table, chain] = entry.split(' ') as [string, string, string];
    const rules = await run(tool, ['-w', '-t', table, '-S']).then(
      (r) => r.stdout.split('\n'),
      () => [] as string[],
    );
    for (const rule of rules.filter((r) => r.startsWith('-A ') && r.includes(` -j ${chain}`) && !r.startsWith(`-A ${chain} `)))
      await run(tool, ['-w', '-t', table, ...splitRule(`-D ${rule.slice(3)}`)]).catch(() => undefined);
    await run(tool, ['-w', '-t', table, '-F', chain]).catch(() => undefined);
    await run(tool, ['-w', '-t', table, '-X', chain]).catch(() => undefined);
  }
}

/** A rule as `-S` prints it, back into arguments (quoted comments kept whole). */
function splitRule(rule: string): string[] {
  return [...rule.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

/** Unmounts whatever is mounted under `dir`, deepest first. */
async function unmountUnder(dir: string): Promise<void> {
  const mounts = await run('findmnt', ['-rn', '-o', 'TARGET']).then(
    (r) => r.stdout.split('\n').filter((t) => t.startsWith(`${dir}/`)),
    () => [] as string[],
  );
  for (const target of mounts.sort((a, b) => b.length - a.length)) await run('umount', ['-l', target]).catch(() => undefined);
}
