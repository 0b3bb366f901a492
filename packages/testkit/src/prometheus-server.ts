import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { type StartedTestContainer, Wait } from 'testcontainers';
import { containerLogs, LoopbackContainer, removeContainer } from './containers.js';
import { freePort } from './etcd-server.js';
import { localImage } from './local-images.js';

/** One scrape job of a test's Prometheus. */
export interface PrometheusScrapeJob {
  readonly jobName: string;
  /** `host:port` on loopback, e.g. the agent's server. */
  readonly targets: readonly string[];
  readonly metricsPath?: string;
}

/** What `PrometheusServer.start` scrapes (its jobs), and how often. */
export interface PrometheusServerOptions {
  readonly jobs: readonly PrometheusScrapeJob[];
  /** Scrape and evaluation interval in seconds (default 1). */
  readonly intervalSeconds?: number;
}

/** One series of an instant query's answer. */
export interface PrometheusSample {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

const BINARY = '/usr/bin/prometheus';

/**
 * A real Prometheus (Debian's `prometheus`, in an image of its own made from the installed binary)
 * of a test's own, started through testcontainers. It shares the host's network, listening on a free
 * loopback port, because what it scrapes (the agent) listens on the host's loopback, which a
 * container on a bridge cannot reach.
 */
export class PrometheusServer {
  private constructor(
    private readonly container: StartedTestContainer,
    /** `http://127.0.0.1:PORT` */
    readonly url: string,
  ) {}

  static async start(options: PrometheusServerOptions): Promise<PrometheusServer> {
    if (!existsSync(BINARY)) {
      throw new Error(`no Prometheus at ${BINARY}: apt-get install -y prometheus (npm test installs it)`);
    }
    const { size, mtimeMs } = statSync(BINARY);
    const version = createHash('sha256').update(`${size}:${mtimeMs}`).digest('hex').slice(0, 12);
    const image = await localImage({ tag: `kubelet-ts-test/prometheus:${version}`, binaries: [BINARY] });
    const port = await freePort();
    const interval = `${options.intervalSeconds ?? 1}s`;
    const config = [
      `global: { scrape_interval: ${interval}, evaluation_interval: ${interval} }`,
      'scrape_configs:',
      ...options.jobs.flatMap((job) => [
        `  - job_name: ${JSON.stringify(job.jobName)}`,
        `    metrics_path: ${JSON.stringify(job.metricsPath ?? '/metrics')}`,
        `    static_configs: [{ targets: ${JSON.stringify(job.targets)} }]`,
      ]),
    ].join('\n');
    const container = await new LoopbackContainer(image, 'prometheus')
      .withNetworkMode('host')
      .withCopyContentToContainer([{ content: config, target: '/etc/prometheus/prometheus.yml' }])
      .withTmpFs({ '/prometheus': 'rw' })
      .withCommand([
        BINARY,
        '--config.file=/etc/prometheus/prometheus.yml',
        '--storage.tsdb.path=/prometheus',
        `--web.listen-address=127.0.0.1:${port}`,
      ])
      .withWaitStrategy(Wait.forLogMessage(/Server is ready to receive web requests/))
      .withStartupTimeout(30_000)
      .start();
    return new PrometheusServer(container, `http://127.0.0.1:${port}`);
  }

  /** An instant query (`/api/v1/query`); throws with Prometheus' error when it refuses the query. */
  async query(promql: string): Promise<PrometheusSample[]> {
    const response = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await response.json()) as { status: string; error?: string; data?: { result: PrometheusSample[] } };
    if (body.status !== 'success') throw new Error(`Prometheus refused ${promql}: ${body.error ?? response.status}`);
    return body.data?.result ?? [];
  }

  /** What Prometheus printed so far, for a message when a series does not come. */
  logs(): Promise<string> {
    return containerLogs(this.container);
  }

  async stop(): Promise<void> {
    await removeContainer(this.container);
  }
}
