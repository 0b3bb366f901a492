import { GenericContainer, type StartedTestContainer } from 'testcontainers';
import { demultiplex } from './docker-logs.js';
import { assertEngine, dockerSocketPath, independentDocker } from './engine.js';

/** The label every container and network of the testkit's modules carries, with the module's name. */
export const TESTKIT_LABEL = 'io.kubelet-ts.testkit';

/**
 * testcontainers' settings for these machines, set once before its first use unless the caller set
 * them: Ryuk's image cannot be pulled (no registry), so each module removes its own containers; the
 * host is 127.0.0.1, where the modules publish their ports (testcontainers would otherwise report
 * the bridge's gateway); the engine is the one the suites use (`DOCKER_HOST` or engines.env).
 */
export function configureTestcontainers(): void {
  process.env['TESTCONTAINERS_RYUK_DISABLED'] ??= 'true';
  process.env['TESTCONTAINERS_HOST_OVERRIDE'] ??= '127.0.0.1';
  process.env['DOCKER_HOST'] ??= `unix://${dockerSocketPath()}`;
}

/**
 * A GenericContainer whose published ports listen on 127.0.0.1 only (testcontainers publishes on
 * every address of the host, and has no option for it), labelled as the testkit's module `module`.
 */
export class LoopbackContainer extends GenericContainer {
  private readonly alsoOn: string[] = [];

  constructor(image: string, module: string) {
    configureTestcontainers();
    super(image);
    this.withLabels({ [TESTKIT_LABEL]: module });
  }

  /**
   * Publishes each port on `address` too, at the same host port (so each must be given one:
   * `withExposedPorts({ container, host })`): for what must be reached from elsewhere than this
   * host's loopback, such as pods in network namespaces of their own.
   */
  withPortsAlsoOn(address: string): this {
    this.alsoOn.push(address);
    return this;
  }

  override async start(): Promise<StartedTestContainer> {
    await assertEngine();
    const bindings = this.hostConfig.PortBindings as Record<string, Array<{ HostIp?: string; HostPort?: string }>> | undefined;
    for (const [port, list] of Object.entries(bindings ?? {})) {
      for (const binding of list) binding.HostIp = '127.0.0.1';
      const fixed = list.filter((b) => b.HostPort !== undefined && b.HostPort !== '' && b.HostPort !== '0');
      if (this.alsoOn.length > 0 && fixed.length !== list.length)
        throw new Error(`port ${port} is published on ${this.alsoOn.join(', ')} too, so it needs a host port of its own`);
      list.push(...this.alsoOn.flatMap((HostIp) => fixed.map((b) => ({ HostIp, HostPort: b.HostPort! }))));
    }
    return super.start();
  }
}

/** The host pid of a started container's first process (for a kill from outside this process). */
export async function containerPid(container: StartedTestContainer): Promise<number> {
  const inspected = await independentDocker().getContainer(container.getId()).inspect();
  return inspected.State.Pid;
}

/**
 * Removes a started container whatever its state (stopped by a fault test, or already gone), with
 * its anonymous volumes.
 */
export async function removeContainer(container: StartedTestContainer): Promise<void> {
  await independentDocker()
    .getContainer(container.getId())
    .remove({ force: true, v: true })
    .catch((error: { statusCode?: number }) => {
      if (error.statusCode !== 404) throw error;
    });
}

/** The last `lines` lines a container printed (stdout and stderr), running or stopped. */
export async function containerLogs(container: StartedTestContainer, lines = 50): Promise<string> {
  const output = await independentDocker().getContainer(container.getId()).logs({ stdout: true, stderr: true, tail: lines });
  return demultiplex(output);
}
