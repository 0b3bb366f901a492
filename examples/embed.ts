/**
 * Embedding kubelet-ts: an agent built from the packages, fed by a source of our own.
 *
 * Build with `npm run build` (or `tsc -b`), then run `node examples/dist/embed.js`. It imports
 * core, the runner and the in-memory runtime, and nothing else: installed from their packed
 * tarballs into an empty project, it runs as it is (integration-tests/test/embed-example.test.ts).
 */
import {
  KubeletError,
  identityOf,
  validateManifest,
  type ContainerManifest,
  type Logger,
  type ManifestSource,
  type SourceSink,
} from '@kubelet-ts/core';
import { createKubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';

/**
 * Warnings and errors as JSON lines on stdout. The agent takes any logger of this shape (pino's
 * is one); it brings none of its own, so an embedder keeps the one it has.
 */
function jsonLogger(bindings: Record<string, unknown> = {}): Logger {
  const line = (level: string) => (fields: object, msg: string) => console.log(JSON.stringify({ level, ...bindings, ...fields, msg }));
  return {
    debug: () => {},
    info: () => {},
    warn: line('warn'),
    error: line('error'),
    child: (more) => jsonLogger({ ...bindings, ...more }),
  };
}

/**
 * A source that turns an in-process job list into manifests, the way a CI system or a scheduler
 * embedding the agent would. Each change delivers the complete set (SET semantics).
 */
class JobListSource implements ManifestSource {
  readonly name = 'jobs';
  private sink: SourceSink | undefined;
  private jobs = new Map<string, string>();

  async start(sink: SourceSink): Promise<void> {
    this.sink = sink;
    this.deliver();
  }

  async close(): Promise<void> {
    this.sink = undefined;
  }

  set(job: string, image: string): void {
    this.jobs.set(job, image);
    this.deliver();
  }

  delete(job: string): void {
    this.jobs.delete(job);
    this.deliver();
  }

  private deliver(): void {
    const manifests: ContainerManifest[] = [];
    for (const [job, image] of this.jobs) {
      const result = validateManifest({ id: job, containers: [{ name: 'main', image, env: [{ name: 'JOB', value: job }] }] });
      if (result.ok) manifests.push(result.manifest);
      else
        this.sink?.error(
          new KubeletError('InvalidManifest', `job ${job}: ${result.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`),
        );
    }
    this.sink?.update(manifests);
  }
}

const runtime = new MemoryRuntime();
const jobs = new JobListSource();
const kubelet = createKubelet({ runtime, sources: [jobs], hostname: 'embedded', logger: jsonLogger() });

await kubelet.start();
jobs.set('nightly-report', 'busybox:1.36');
jobs.set('cache-warmer', 'busybox:1.36');
jobs.set('Bad Job', 'busybox:1.36'); // rejected with its field, the others run
const running = () =>
  runtime
    .snapshot()
    .filter((c) => c.state === 'running')
    .map((c) => identityOf(c.labels)?.podId)
    .sort()
    .join(', ');

await kubelet.sync();
console.log(`running: ${running()}`);
jobs.delete('cache-warmer');
await kubelet.sync();
console.log(`running: ${running()}`);

await kubelet.close();
