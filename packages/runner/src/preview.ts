import {
  plan,
  reportPlan,
  type ContainerManifest,
  type ContainerRuntime,
  type ManifestSource,
  type PlanReport,
  type SourceObject,
} from '@kubelet-ts/core';
import { withExitTimes } from './exit-times.js';
import { SourceMux } from './mux.js';

/** What `previewPlan` takes: a runtime to list, the sources to read once, and the node's name. */
export interface PreviewOptions {
  readonly runtime: ContainerRuntime;
  readonly sources: readonly ManifestSource[];
  readonly hostname: string;
  /** How long to wait for every source's first delivery. Default 10 s. */
  readonly waitMs?: number;
  /** Called with each problem a source reports while it is read. */
  readonly onError?: (source: string, error: Error) => void;
  readonly now?: () => number;
}

/**
 * What a pass would do now, without doing it: reads every source once (waiting for each first
 * delivery, up to `waitMs`), lists the runtime once, plans, and closes the sources. Sources that
 * did not deliver in time are named in the report, and removals are then withheld, as the agent
 * would withhold them.
 */
export async function previewPlan(options: PreviewOptions): Promise<PlanReport> {
  const mux = new SourceMux(options.sources.map((s) => s.name));
  let seen!: () => void;
  const allSeen = new Promise<void>((resolve) => (seen = resolve));
  const deliver = (source: string, manifests: readonly ContainerManifest[], objects?: readonly SourceObject[]) => {
    mux.update(source, manifests, objects);
    if (mux.allSeen()) seen();
  };
  if (options.sources.length === 0) seen();
  try {
    await Promise.all(
      options.sources.map((s) =>
        s
          .start({ update: (m, o) => deliver(s.name, m, o), error: (e) => options.onError?.(s.name, e) })
          .catch((e: unknown) => options.onError?.(s.name, e as Error)),
      ),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([allSeen, new Promise<void>((resolve) => (timer = setTimeout(resolve, options.waitMs ?? 10_000)))]);
    clearTimeout(timer);
  } finally {
    await Promise.all(options.sources.map((s) => s.close().catch(() => undefined)));
  }
  const [listed, sandboxes] = await Promise.all([options.runtime.list(), options.runtime.listSandboxes()]);
  const actual = await withExitTimes(options.runtime, listed, options.hostname);
  const p = plan({
    desired: mux.desired().pods,
    actual,
    sandboxes,
    node: options.hostname,
    allowRemovals: mux.allSeen(),
    objects: (source) => mux.objects(source),
    now: (options.now ?? Date.now)(),
  });
  return reportPlan(p, mux.unseen());
}

/** The report as an operator reads it, one step a line. */
export function formatPlanReport(report: PlanReport, header: string): string {
  const lines = [
    `${header}: ${report.inSync ? 'in sync, nothing to do' : `${report.steps.length} step${report.steps.length === 1 ? '' : 's'}`}`,
  ];
  const width = Math.max(0, ...report.steps.map((s) => `${s.podId}/${s.container}`.length));
  for (const s of report.steps) {
    const what =
      s.action === 'create' ? `image ${s.image}` : s.action === 'run-sandbox' ? 'pod network namespace' : (s.id ?? '').slice(0, 12);
    lines.push(`  ${`${s.podId}/${s.container}`.padEnd(width)}  ${s.action.padEnd(6)}  ${s.reason.padEnd(12)}  ${what}`);
  }
  for (const b of report.backOffs) {
    lines.push(
      `  ${`${b.podId}/${b.container}`.padEnd(width)}  waits   back-off      restart at ${new Date(b.until).toISOString()} (exit code ${b.exitCode ?? '?'})`,
    );
  }
  if (report.held > 0) lines.push(`held: ${report.held} removal(s) until every source has been seen`);
  if (report.unseenSources.length > 0) lines.push(`not seen: ${report.unseenSources.join(', ')} (its manifests are not in this plan)`);
  return `${lines.join('\n')}\n`;
}
