import { isGone, type ContainerCgroup, type KernelStats } from './kernel-stats.js';

/** What the engine says of a container, once, for its figures to be read from the kernel. */
export interface ContainerProcess {
  /** Its main process as the engine sees it (Docker `State.Pid`, containerd's verbose `pid`); 0 when it is not running. */
  readonly pid: number;
  /** A sandbox holder on the host's network: the traffic of its namespace is the node's, not the pod's. */
  readonly hostNetwork: boolean;
}

/** What one inspect tells of a container for reading its figures from the kernel. */
export interface ContainerRun extends ContainerProcess {
  /** Where its figures are; absent when the kernel cannot tell them, and the engine's API serves them. */
  readonly cgroup?: ContainerCgroup;
}

/** A run whose figures the kernel tells. */
export type KernelRun = ContainerRun & { readonly cgroup: ContainerCgroup };

/**
 * The running containers' main processes and cgroups, each learnt by one inspect (the engine's
 * pid, then `/proc/<pid>/cgroup`) and kept while the container keeps running: a sample then reads
 * only the cgroup files. A container that stopped or started again has a cgroup directory of
 * another identity (see `ContainerCgroup`), and is learnt again.
 */
export class ContainerRuns {
  private readonly runs = new Map<string, ContainerRun>();
  /** Inspects in flight, so that an id asked twice at once (a container and its pod's holder) is inspected once. */
  private readonly learning = new Map<string, Promise<ContainerRun>>();

  constructor(
    private readonly kernel: KernelStats,
    /** One call to the engine (Docker's inspect, CRI's verbose status), failing NotFound for a container it does not know. */
    private readonly inspect: (id: string) => Promise<ContainerProcess>,
  ) {}

  /**
   * `figuresOf` from the kernel for container `id`, with its run; `figures` is undefined for the
   * engine's API to answer: when the kernel cannot tell the run, when it ended since its inspect
   * (forgotten, to be learnt again; the API says whether it is stopped or gone), or when its files
   * fail otherwise (served by the API from then on). NotFound for a container the engine does not know.
   */
  async read<T>(
    id: string,
    figuresOf: (kernel: KernelStats, run: KernelRun) => T,
    { byProcess }: { readonly byProcess: boolean },
  ): Promise<{ run: ContainerRun; figures?: T }> {
    const run = await this.of(id, byProcess);
    if (!toldByKernel(run)) return { run };
    try {
      return { run, figures: figuresOf(this.kernel, run) };
    } catch (error) {
      if (isGone(error)) this.runs.delete(id);
      else this.runs.set(id, { pid: run.pid, hostNetwork: run.hostNetwork });
      return { run };
    }
  }

  /** Forgets the runs of the ids not in `asked`: the agent no longer asks about them. */
  keepOnly(asked: ReadonlySet<string>): void {
    for (const id of this.runs.keys()) if (!asked.has(id)) this.runs.delete(id);
  }

  /**
   * The run of `id`, inspected unless it is kept and (`byProcess`: read through its process, whose
   * pid a new run changes) still the same. Figures read by cgroup need no such check: a container's
   * cgroup is named after its id, the same directory in every run, and a stopped one's is gone (its
   * reads fail ENOENT, and it is learnt again).
   */
  private async of(id: string, byProcess: boolean): Promise<ContainerRun> {
    const kept = this.runs.get(id);
    // A run the kernel cannot tell is kept as it is: what made it so (another cgroup namespace,
    // unreadable files) lasts, and the API serves it without a new inspect each time.
    if (kept !== undefined && (kept.cgroup === undefined || !byProcess || this.kernel.sameRun(kept.cgroup))) return kept;
    let learnt = this.learning.get(id);
    if (learnt === undefined) {
      learnt = this.learn(id).finally(() => this.learning.delete(id));
      this.learning.set(id, learnt);
    }
    return learnt;
  }

  private async learn(id: string): Promise<ContainerRun> {
    this.runs.delete(id);
    const { pid, hostNetwork } = await this.inspect(id);
    // A container that is not running has no process to follow: the API's zero figures serve it,
    // and the next sample asks again.
    if (pid <= 0) return { pid: 0, hostNetwork };
    let cgroup: ContainerCgroup | undefined;
    try {
      cgroup = this.kernel.locate(id, pid);
    } catch (error) {
      // Ended since the inspect: the API says what it is now, and the next sample asks again.
      if (isGone(error)) return { pid: 0, hostNetwork };
      // Unreadable otherwise: kept, for the API to serve.
    }
    const run = cgroup === undefined ? { pid, hostNetwork } : { pid, hostNetwork, cgroup };
    this.runs.set(id, run);
    return run;
  }
}

function toldByKernel(run: ContainerRun): run is KernelRun {
  return run.cgroup !== undefined;
}
