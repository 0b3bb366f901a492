import {
  KubeletError,
  Labels,
  type Clock,
  type ListOptions,
  type Logger,
  type PortBinding,
  type SandboxSpec,
  type SandboxSummary,
} from '@kubelet-ts/core';
import type { DockerApi, DockerContainerInfo } from './docker-api.js';
import { ADAPTER } from './errors.js';
import { removePodVolumes } from './volume-dirs.js';

export interface DockerSandboxesOptions {
  readonly docker: DockerApi;
  readonly hostIp: string;
  readonly podInfraImage: string;
  readonly volumesRoot: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Runs an engine call, translating its failures (`notModifiedIsSuccess` for start/stop's 304). */
  readonly call: <T>(what: string, fn: () => Promise<T>, notModifiedIsSuccess?: boolean) => Promise<T>;
  /** Makes sure the pod infra image is there. */
  readonly ensureImage: (image: string) => Promise<void>;
}

/**
 * Pod sandboxes on Docker: each is an infrastructure container (`--pod-infra-image`, a process that
 * sleeps) that holds the pod's network namespace and publishes its ports; the pod's containers join
 * it with `NetworkMode: container:<id>`. The same containers, labels and names as the releases
 * before sandboxes were explicit, so an upgraded agent adopts them.
 */
export class DockerSandboxes {
  constructor(private readonly options: DockerSandboxesOptions) {}

  async run(spec: SandboxSpec): Promise<SandboxSummary> {
    const { docker, call } = this.options;
    await this.options.ensureImage(this.options.podInfraImage);
    const { exposed, bindings } = portBindings(spec.ports, this.options.hostIp);
    const created = await call(`create sandbox ${spec.name}`, () =>
      docker.createContainer({
        name: spec.name,
        Image: this.options.podInfraImage,
        Hostname: spec.hostname,
        Labels: { ...spec.labels },
        ExposedPorts: exposed,
        HostConfig: { PortBindings: bindings },
      }),
    );
    try {
      await call(`start sandbox ${spec.name}`, () => docker.getContainer(created.id).start(), true);
    } catch (error) {
      // A sandbox that cannot start (a host port already taken) must leave nothing behind.
      await call(`remove sandbox ${spec.name}`, () => docker.getContainer(created.id).remove({ force: true, v: true })).catch(() => undefined);
      throw error;
    }
    this.options.logger.info({ podId: spec.podId, sandbox: created.id.slice(0, 12), ports: spec.ports.length }, 'pod sandbox running');
    return { id: created.id, name: spec.name, labels: { ...spec.labels }, state: 'ready', createdAt: this.options.clock.now() };
  }

  async list(options: ListOptions = {}): Promise<SandboxSummary[]> {
    const { docker, call } = this.options;
    if (options.includeForeign === true) {
      const all = await call('list containers', () => docker.listContainers({ all: true }));
      return all.filter((c) => c.Labels?.[Labels.sandbox] !== undefined || c.Image === this.options.podInfraImage).map(summaryOf);
    }
    const found = await call('list sandboxes', () => docker.listContainers({ all: true, filters: { label: [Labels.sandbox] } }));
    // A holder whose network is not a namespace of its own (the host's, or another container's)
    // was not made by this adapter, whatever its labels say: joining it would be using it.
    return found.filter((c) => ownNamespace(c)).map(summaryOf);
  }

  async stop(id: string): Promise<void> {
    const { docker, call } = this.options;
    await call(`inspect sandbox ${id}`, () => docker.getContainer(id).inspect());
    // Its containers first: they would keep the namespace alive without it.
    for (const member of await this.members(id)) {
      await call(`stop ${member.Id}`, () => docker.getContainer(member.Id).stop({ t: 0 }), true);
    }
    await call(`stop sandbox ${id}`, () => docker.getContainer(id).stop({ t: 0 }), true);
  }

  async remove(id: string, options: { readonly volumes?: boolean } = {}): Promise<void> {
    const { docker, call } = this.options;
    let podId: string | undefined;
    try {
      podId = (await call(`inspect sandbox ${id}`, () => docker.getContainer(id).inspect())).Config.Labels?.[Labels.sandbox];
    } catch (error) {
      if (error instanceof KubeletError && error.code === 'NotFound') return;
      throw error;
    }
    for (const member of await this.members(id)) await ignoreGone(call(`remove ${member.Id}`, () => docker.getContainer(member.Id).remove({ force: true, v: true })));
    await ignoreGone(call(`remove sandbox ${id}`, () => docker.getContainer(id).remove({ force: true, v: true })));
    if (options.volumes === true && podId !== undefined) await removePodVolumes(this.options.volumesRoot, podId);
  }

  /** The containers in the sandbox's namespace. */
  private async members(id: string): Promise<DockerContainerInfo[]> {
    const all = await this.options.call(`list members of ${id}`, () => this.options.docker.listContainers({ all: true }));
    return all.filter((c) => c.HostConfig?.NetworkMode === `container:${id}`);
  }
}

/** The Engine API's exposed ports and bindings for `ports`, bound to `hostIp`. */
export function portBindings(ports: readonly PortBinding[], hostIp: string) {
  const exposed: Record<string, Record<string, never>> = {};
  const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
  for (const p of ports) {
    const key = `${p.containerPort}/${p.protocol.toLowerCase()}`;
    exposed[key] = {};
    if (p.hostPort !== undefined) (bindings[key] ??= []).push({ HostIp: hostIp, HostPort: String(p.hostPort) });
  }
  return { exposed, bindings };
}

function ownNamespace(c: DockerContainerInfo): boolean {
  const mode = c.HostConfig?.NetworkMode ?? 'default';
  return mode !== 'host' && mode !== 'none' && !mode.startsWith('container:');
}

function summaryOf(c: DockerContainerInfo): SandboxSummary {
  return {
    id: c.Id,
    name: (c.Names[0] ?? '').replace(/^\//, ''),
    labels: c.Labels ?? {},
    state: c.State === 'running' ? 'ready' : 'notready',
    createdAt: c.Created * 1000,
  };
}

async function ignoreGone(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof KubeletError && error.code === 'NotFound')) throw error;
  }
}

