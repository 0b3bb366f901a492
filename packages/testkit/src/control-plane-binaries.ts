import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The build script and the Go module it builds, shipped with the package (`control-plane/`). */
export const CONTROL_PLANE_SCRIPT = fileURLToPath(new URL('../control-plane/build.sh', import.meta.url));

/** Where a release's binaries are, and what built them. */
export interface ControlPlaneBinaries {
  /** The folder of `etcd`, `kube-apiserver`, `kube-controller-manager`, `kube-scheduler` and `kubelet`. */
  readonly dir: string;
  /** The Kubernetes release they report, e.g. `v1.37.2`. */
  readonly release: string;
  /** A hash of the pinned module files they were built from. */
  readonly stamp: string;
}

/** What `buildControlPlane` builds: which Kubernetes release, and where its progress goes. */
export interface BuildControlPlaneOptions {
  /**
   * The Kubernetes release (default: the one pinned in `control-plane/build.sh`, whose go.sum is
   * committed). Another release is pinned afresh in a temp copy of the module, from the Go module proxy.
   */
  readonly release?: string;
  /** Where the build's progress goes (default: this process's stderr). */
  readonly log?: (line: string) => void;
}

/**
 * The control plane's binaries, built from the Go module proxy by `control-plane/build.sh` into
 * `~/.cache/kubelet-ts/control-plane/<release>/` (or `$KUBELET_TS_CACHE/control-plane/<release>/`)
 * unless they are there already: about 11 minutes and 4 GB of Go build cache on 2 cores the first
 * time (and about 4 more for metrics-server, which `build.sh build` builds too), nothing after.
 * Needs Go (1.26 or newer) on PATH. Call it from a global set-up, before any
 * test's time-out starts.
 */
export async function buildControlPlane(options: BuildControlPlaneOptions = {}): Promise<ControlPlaneBinaries> {
  const env = { ...process.env, ...(options.release === undefined ? {} : { KUBE_RELEASE: options.release }) };
  return buildWithScript('build', env, options.log);
}

/** Where metrics-server's binary is, and what built it. */
export interface MetricsServerBinary {
  /** The static `metrics-server` binary. */
  readonly path: string;
  /** The release it reports, e.g. `v0.8.0`. */
  readonly release: string;
  /** A hash of its pinned module files (`control-plane/metrics-server/go.mod`, `go.sum`). */
  readonly stamp: string;
}

/**
 * metrics-server, built from the Go module proxy at the release pinned in
 * `control-plane/metrics-server/` into `~/.cache/kubelet-ts/metrics-server/<release>/` (or under
 * `$KUBELET_TS_CACHE`) unless it is there already: about 4 minutes on 2 cores the first time,
 * nothing after (`build.sh build`, which npm test runs first, builds it too).
 */
export async function buildMetricsServer(options: Pick<BuildControlPlaneOptions, 'log'> = {}): Promise<MetricsServerBinary> {
  const built = await buildWithScript('metrics-server', process.env, options.log);
  return { path: join(built.dir, 'metrics-server'), release: built.release, stamp: built.stamp };
}

/** Runs `build.sh <command>`: its last line out is the folder, which holds `.release` and `.stamp`. */
async function buildWithScript(
  command: string,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<{ dir: string; release: string; stamp: string }> {
  const dir = await new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [CONTROL_PLANE_SCRIPT, command], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const tail: string[] = [];
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        log(line);
        tail.push(line);
        tail.splice(0, Math.max(0, tail.length - 20));
      }
    });
    child.once('error', (error) => reject(new Error(`could not run ${CONTROL_PLANE_SCRIPT}: ${error.message}`, { cause: error })));
    child.once('exit', (code) => {
      if (code === 0) resolve(out.trim().split('\n').at(-1)!);
      else reject(new Error(`${CONTROL_PLANE_SCRIPT} ${command} failed (exit ${code}):\n${tail.join('\n')}`));
    });
  });
  const [release, stamp] = await Promise.all(['.release', '.stamp'].map(async (name) => (await readFile(join(dir, name), 'utf8')).trim()));
  return { dir, release: release!, stamp: stamp! };
}
