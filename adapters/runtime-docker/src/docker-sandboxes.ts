import {
  HOST_NETWORK_SANDBOX_HASH,
  KubeletError,
  Labels,
  sysctlNamespace,
  type Clock,
  type ListOptions,
  type Logger,
  type PortBinding,
  type SandboxSpec,
  type SandboxSummary,
} from '@kubelet-ts/core';
import { removePodVolumes } from '@kubelet-ts/host-volumes';
import type { DockerApi, DockerContainerInfo, DockerInspect } from './docker-api.js';
import { familiarImageName, type EngineKind } from './engine-kind.js';
import { dockerDetail } from './errors.js';

export interface DockerSandboxesOptions {
  readonly docker: DockerApi;
  readonly hostIp: string;
  readonly podInfraImage: string;
  readonly volumesRoot: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Runs an engine call, translating its failures (`notModifiedIsSuccess` for start/stop's 304). */
  readonly call: <T>(what: string, fn: () => Promise<T>, notModifiedIsSuccess?: boolean) => Promise<T>;
  /** What serves the API, asked once (see `EngineKind`). */
  readonly engine: () => Promise<EngineKind>;
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
    // A host-network holder is on the host's network, as its pod's containers then are through it:
    // it publishes nothing (its ports are the host's), and sets no hostname (the host's stays).
    // The pod's network sysctls are set in the holder's namespace, which its containers join; the
    // IPC ones go on each container (`ContainerSpec.ipcSysctls`: Docker gives each its own).
    const netSysctls = Object.entries(spec.sysctls ?? {}).filter(([name]) => sysctlNamespace(name) === 'net');
    // The pod's resolver on the holder: a container that joins its network gets its resolv.conf.
    // Docker fills an empty list from the host's file; `.` is its word for no search domain.
    const dns =
      spec.dns === undefined
        ? {}
        : {
            Dns: [...spec.dns.servers],
            DnsSearch: spec.dns.searches.length === 0 ? ['.'] : [...spec.dns.searches],
            DnsOptions: [...spec.dns.options],
          };
    const network =
      spec.hostNetwork === true
        ? { Labels: { ...spec.labels, [HOST_NETWORK_HOLDER]: 'true' }, HostConfig: { NetworkMode: 'host' } }
        : {
            Hostname: spec.hostname,
            Labels: { ...spec.labels },
            ExposedPorts: exposed,
            HostConfig: {
              PortBindings: bindings,
              ...(netSysctls.length === 0 ? {} : { Sysctls: Object.fromEntries(netSysctls) }),
              ...dns,
            },
          };
    const created = await call(`create sandbox ${spec.name}`, () =>
      docker.createContainer({ name: spec.name, Image: this.options.podInfraImage, ...network }),
    );
    try {
      await call(`start sandbox ${spec.name}`, () => docker.getContainer(created.id).start(), true);
    } catch (error) {
      // A sandbox that cannot start (a host port already taken) must leave nothing behind.
      await call(`remove sandbox ${spec.name}`, () => docker.getContainer(created.id).remove({ force: true, v: true })).catch(
        () => undefined,
      );
      await this.warnOfHeldPorts(spec, error);
      throw error;
    }
    this.options.logger.info({ podId: spec.podId, sandbox: created.id.slice(0, 12), ports: spec.ports.length }, 'pod sandbox running');
    return { id: created.id, name: spec.name, labels: { ...spec.labels }, state: 'ready', createdAt: this.options.clock.now() };
  }

  async list(options: ListOptions = {}): Promise<SandboxSummary[]> {
    const { docker, call } = this.options;
    if (options.includeForeign === true && options.podId === undefined) {
      const all = await call('list containers', () => docker.listContainers({ all: true }));
      // Podman names images in full (docker.io/…): compare the names as Docker shows them.
      const infra = familiarImageName(this.options.podInfraImage);
      return all.filter((c) => c.Labels?.[Labels.sandbox] !== undefined || familiarImageName(c.Image) === infra).map(summaryOf);
    }
    const label = options.podId === undefined ? Labels.sandbox : `${Labels.sandbox}=${options.podId}`;
    const found = await call('list sandboxes', () => docker.listContainers({ all: true, filters: { label: [label] } }));
    // A holder whose network is not a namespace of its own (the host's, or another container's)
    // was not made by this adapter, whatever its labels say: joining it would be using it. The one
    // exception is ours: a holder on the host's network labelled as a host-network sandbox, which is
    // where this adapter puts one (a holder made for a namespace of its own never is).
    return found.filter((c) => ownNamespace(c) || hostNetworkHolder(c)).map(summaryOf);
  }

  async stop(id: string): Promise<void> {
    const { docker, call } = this.options;
    const sandbox = await call(`inspect sandbox ${id}`, () => docker.getContainer(id).inspect());
    // Its containers first: they would keep the namespace alive without it.
    for (const member of await this.members(sandbox)) {
      await call(`stop ${member}`, () => docker.getContainer(member).stop({ t: 0 }), true);
    }
    await call(`stop sandbox ${id}`, () => docker.getContainer(id).stop({ t: 0 }), true);
  }

  async remove(id: string, options: { readonly volumes?: boolean } = {}): Promise<void> {
    const { docker, call } = this.options;
    let sandbox: DockerInspect;
    try {
      sandbox = await call(`inspect sandbox ${id}`, () => docker.getContainer(id).inspect());
    } catch (error) {
      if (error instanceof KubeletError && error.code === 'NotFound') return;
      throw error;
    }
    const podId = sandbox.Config.Labels?.[Labels.sandbox];
    for (const member of await this.members(sandbox))
      await ignoreGone(call(`remove ${member}`, () => docker.getContainer(member).remove({ force: true, v: true })));
    await ignoreGone(call(`remove sandbox ${id}`, () => docker.getContainer(id).remove({ force: true, v: true })));
    if (options.volumes === true && podId !== undefined) await removePodVolumes(this.options.volumesRoot, podId);
  }

  /** The ids of the containers in the sandbox's namespace. */
  private async members(sandbox: DockerInspect): Promise<string[]> {
    const { docker, call } = this.options;
    const id = sandbox.Id;
    const all = await call(`list members of ${id}`, () => docker.listContainers({ all: true }));
    if ((await this.options.engine()) === 'docker')
      return all.filter((c) => c.HostConfig?.NetworkMode === `container:${id}`).map((c) => c.Id);
    // Podman lists containers without their HostConfig: inspect those that can have joined the
    // sandbox, which are the ones made after it (Created is in seconds in a listing).
    const since = Math.floor(Date.parse(sandbox.Created) / 1000);
    const candidates = all.filter((c) => c.Id !== id && c.Created >= since);
    const inspected = await Promise.all(
      candidates.map((c) =>
        docker
          .getContainer(c.Id)
          .inspect()
          .catch(() => undefined),
      ),
    );
    return inspected.filter((c) => c?.HostConfig.NetworkMode === `container:${id}`).map((c) => c!.Id);
  }

  /**
   * Podman 4.3 binds a container's host ports in its service process before the runtime starts
   * it, and keeps them bound when that start fails for any other reason than a port: no later
   * container can publish them until the service restarts. That cannot be undone through the
   * API; say so once, where it happens, so that the "address already in use" that follows is
   * understood.
   */
  private async warnOfHeldPorts(spec: SandboxSpec, error: unknown): Promise<void> {
    const published = spec.ports.filter((p) => p.hostPort !== undefined).map((p) => p.hostPort);
    if (published.length === 0 || /address already in use|already allocated/i.test(dockerDetail(error))) return;
    if ((await this.options.engine().catch(() => 'docker')) !== 'podman') return;
    this.options.logger.warn(
      { podId: spec.podId, hostPorts: published, error: dockerDetail(error) },
      'the pod sandbox failed to start on Podman, which keeps its host ports bound until the Podman service restarts (Podman 4.3)',
    );
  }
}

/** The Engine API's exposed ports and bindings for `ports`, bound to each port's `hostIp`, else to `hostIp`. */
function portBindings(ports: readonly PortBinding[], hostIp: string) {
  const exposed: Record<string, Record<string, never>> = {};
  const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
  for (const p of ports) {
    const key = `${p.containerPort}/${p.protocol.toLowerCase()}`;
    exposed[key] = {};
    // A port's own address (v1 hostIP) before the adapter's default.
    if (p.hostPort !== undefined) (bindings[key] ??= []).push({ HostIp: p.hostIp ?? hostIp, HostPort: String(p.hostPort) });
  }
  return { exposed, bindings };
}

/**
 * Written on every holder this adapter puts on the host's network. The sandbox hash alone does not
 * tell one: a host-network pod's hash moves with what else makes its sandbox (a shared process
 * namespace, privileged containers, hostPID…), and a holder left unrecognised is one the agent
 * neither reuses nor removes (a new one every pass, issue 48).
 */
export const HOST_NETWORK_HOLDER = 'io.kubelet-ts.host-network-holder';

/** A holder on the host's network that this adapter made: its label, or (an agent before the label) the plain host-network hash. */
function hostNetworkHolder(c: DockerContainerInfo): boolean {
  if (c.HostConfig?.NetworkMode !== 'host') return false;
  return c.Labels?.[HOST_NETWORK_HOLDER] === 'true' || c.Labels?.[Labels.sandboxHash] === HOST_NETWORK_SANDBOX_HASH;
}

function ownNamespace(c: DockerContainerInfo): boolean {
  const mode = c.HostConfig?.NetworkMode ?? 'default';
  return mode !== 'host' && mode !== 'none' && !mode.startsWith('container:');
}

function summaryOf(c: DockerContainerInfo): SandboxSummary {
  // The pod's address: the holder's on its (first) network, as the list gives it.
  const ip = Object.values(c.NetworkSettings?.Networks ?? {}).find((n) => (n?.IPAddress ?? '') !== '')?.IPAddress;
  return {
    id: c.Id,
    name: (c.Names[0] ?? '').replace(/^\//, ''),
    labels: c.Labels ?? {},
    state: c.State === 'running' ? 'ready' : 'notready',
    createdAt: c.Created * 1000,
    ...(ip === undefined || c.State !== 'running' ? {} : { ip }),
  };
}

async function ignoreGone(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof KubeletError && error.code === 'NotFound')) throw error;
  }
}
