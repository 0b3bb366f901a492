import { poolConnections, type PooledConnections } from './pooled-connections.js';
import type { HealthView, HostAccess, ImageRecord, Logger, NodeAllocatable } from '@kubelet-ts/core';
import { CoordinationV1Api, CoreV1Api, EventsV1Api, KubeConfig, type V1Taint } from '@kubernetes/client-node';
import { ApiPodSource } from './api-pod-source.js';
import { hostFacts } from './host-facts.js';
import { NodeEvents } from './node-events.js';
import { NodeLease } from './node-lease.js';
import { NodeRegistration } from './node-registration.js';
import type { NodeSpecFacts } from './node-object.js';
import { MirrorPods, type StaticPods } from './mirror-pods.js';
import { PodStatusWriter, type StatusSource } from './pod-status-writer.js';
import type { ApiServices } from './api-services.js';
import type { PodFeed } from './pod-feed.js';
import type { PodApiServer } from './service-variables.js';

/**
 * The version the agent reports as `nodeInfo.kubeletVersion`: the Kubernetes release whose node
 * behaviour it follows (the API it speaks, the minor of the control plane it is tested against),
 * with `+kubelet-ts.<version>` as build metadata, which semantic versioning ignores when versions are
 * compared. A component that decides by version (kubectl's skew warning, the API server's) sees the
 * release it expects; one that reads the metadata sees that the node is not the kubelet.
 */
export const KUBELET_VERSION = 'v1.37.0+kubelet-ts.0.1.0';

/** What `ClusterNode` needs: the kubeconfig, the node's name, address and port, its labels, taints and allocatable resources, and its status and Lease periods. */
export interface ClusterNodeOptions extends HostAccess {
  /** `--kubeconfig`: the cluster, and the node's credentials in it. */
  readonly kubeconfigPath: string;
  /**
   * The kubeconfig already read (then `kubeconfigPath` is not read): one for many nodes of one
   * process (`kubelet-ts hollow`), whose credentials may act for each of them.
   */
  readonly kubeConfig?: KubeConfig;
  /** One watch of every bound pod shared by the nodes of one process (`kubelet-ts hollow`); absent, the node watches its own. */
  readonly podFeed?: PodFeed;
  /** The Services, watched once for the nodes of one process; absent, the node watches them itself. */
  readonly services?: ApiServices;
  readonly nodeName: string;
  /** `--node-ip`. */
  readonly address: string;
  /** The agent's port (`--port`). */
  readonly port: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly taints?: readonly V1Taint[];
  readonly allocatable: NodeAllocatable;
  /** The file system of the pods' volumes: the node's ephemeral storage. */
  readonly fsPath: string;
  /** `<engine>://<version>`. */
  readonly containerRuntimeVersion: string;
  readonly logger: Logger;
  readonly nodeStatusUpdateFrequencyMs?: number;
  readonly nodeStatusReportFrequencyMs?: number;
  readonly nodeLeaseDurationSeconds?: number;
  /** `status.declaredFeatures` (see `NodeSpecFacts.declaredFeatures`). */
  readonly declaredFeatures?: readonly string[];
  /**
   * `--pod-api-server`: where the pods reach the API server. Absent: the kubeconfig's server,
   * unless it is loopback (which a pod on a bridge cannot dial); then the `kubernetes` Service's
   * ClusterIP, as the kubelet gives it, said once at start.
   */
  readonly podApiServer?: PodApiServer;
}

/** What the node needs of the agent: its health, and its pods' statuses and events (see `StatusSource`). */
export interface ClusterAgent extends StatusSource, StaticPods {
  health(): HealthView;
  /** The runtime's images (`status.images`). */
  images(): Promise<readonly ImageRecord[]>;
}

/**
 * The agent as a node of a cluster (the shape of virtual-kubelet's `node` package: parts beside the
 * agent that see it through its view): the Node (`NodeRegistration`), its Lease (`NodeLease`), the
 * pods bound to it (`ApiPodSource`, one more source of the agent), and their status written back
 * (`PodStatusWriter`). Make it, hand `source` to the agent with its other sources, start the agent,
 * then `start(agent)`; `close()` stops everything it started.
 */
export class ClusterNode {
  readonly source: ApiPodSource;
  /** The cluster and the node's credentials, from `kubeconfigPath`: for the node's other parts (`ClusterAuth`, `ServingCertificateRequester`). */
  readonly kubeConfig: KubeConfig;
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;
  private registration: NodeRegistration | undefined;
  private lease: NodeLease | undefined;
  private writer: PodStatusWriter | undefined;
  private mirrors: MirrorPods | undefined;
  private events: NodeEvents | undefined;
  private mirrorTimer: NodeJS.Timeout | undefined;
  private stopWatching: (() => void) | undefined;
  private registered!: (uid: string) => void;
  private readonly nodeRegistered = new Promise<string>((resolve) => (this.registered = resolve));
  private closed = false;
  /** The keep-alive connections of the node's API clients (see `poolConnections`). */
  readonly connections: PooledConnections;

  get nodeName(): string {
    return this.options.nodeName;
  }

  constructor(private readonly options: ClusterNodeOptions) {
    this.kubeConfig = options.kubeConfig ?? new KubeConfig();
    if (options.kubeConfig === undefined) this.kubeConfig.loadFromFile(options.kubeconfigPath);
    // Before any client is made: every request of the node (and of every node holding the same KubeConfig) reuses connections.
    this.connections = poolConnections(this.kubeConfig);
    this.core = this.kubeConfig.makeApiClient(CoreV1Api);
    this.coordination = this.kubeConfig.makeApiClient(CoordinationV1Api);
    const podApiServer = options.podApiServer ?? reachableServer(this.kubeConfig, options.logger);
    this.source = new ApiPodSource({
      ...options,
      ...(podApiServer === undefined ? {} : { podApiServer }),
      kubeConfig: this.kubeConfig,
      nodeName: options.nodeName,
      logger: options.logger,
      nodeRegistered: this.nodeRegistered,
      unrunnable: (pod) => void this.writer?.unrunnable(pod),
      mirrorsChanged: () => {
        void this.mirrors?.reconcile();
        this.writer?.rewriteMirrors();
      },
    });
  }

  /** Registers the Node (in the background, retried until it can), then holds its Lease and writes its pods' status. */
  async start(agent: ClusterAgent): Promise<void> {
    const { options } = this;
    // An unhealthy agent's Lease is not renewed: said once each time its reason changes, since the
    // cluster then sees the node NotReady and the operator asks why.
    let unhealthySaid: string | undefined;
    const healthy = () => {
      const h = agent.health();
      // The reason without its running figures ("no sync pass has completed for N ms").
      const reason = h.healthy ? undefined : h.message.replace(/\d+ ms/g, '');
      if (reason !== undefined && reason !== unhealthySaid)
        options.logger.warn(
          { node: options.nodeName, reason: h.message },
          `node lease not renewed while the agent is unhealthy: ${h.message}`,
        );
      unhealthySaid = reason;
      return h.healthy;
    };
    const facts: NodeSpecFacts = {
      name: options.nodeName,
      labels: options.labels ?? {},
      taints: options.taints ?? [],
      address: options.address,
      port: options.port,
      allocatable: options.allocatable,
      host: await hostFacts(options.fsPath),
      kubeletVersion: KUBELET_VERSION,
      containerRuntimeVersion: options.containerRuntimeVersion,
      ...(options.declaredFeatures === undefined ? {} : { declaredFeatures: options.declaredFeatures }),
    };
    this.writer = new PodStatusWriter({
      api: this.core,
      agent,
      source: this.source.name,
      mirrorOf: (podId) => this.mirrors?.mirrorOf(podId),
      logger: options.logger,
    });
    this.writer.start();
    this.registration = new NodeRegistration({
      api: this.core,
      facts,
      health: () => {
        const h = agent.health();
        return h.healthy ? { ready: true } : { ready: false, message: h.message };
      },
      images: () => agent.images(),
      logger: options.logger,
      ...(options.nodeStatusUpdateFrequencyMs === undefined ? {} : { updateFrequencyMs: options.nodeStatusUpdateFrequencyMs }),
      ...(options.nodeStatusReportFrequencyMs === undefined ? {} : { reportFrequencyMs: options.nodeStatusReportFrequencyMs }),
    });
    void this.registration.register().then((node) => {
      const uid = node?.metadata?.uid;
      if (node === undefined || uid === undefined || this.closed) return;
      this.registration?.start();
      this.lease = new NodeLease({
        api: this.coordination,
        nodeName: options.nodeName,
        nodeUid: uid,
        healthy,
        logger: options.logger,
        ...(options.nodeLeaseDurationSeconds === undefined ? {} : { durationSeconds: options.nodeLeaseDurationSeconds }),
      });
      this.lease.start();
      // The static pods' mirrors, brought in line whenever a pod's status changes, and every 10 s.
      this.mirrors = new MirrorPods({
        api: this.core,
        nodeName: options.nodeName,
        nodeUid: uid,
        agent,
        apiSource: this.source.name,
        mirrors: () => this.source.mirrors(),
        made: (podId) => this.writer?.rewrite(podId),
        logger: options.logger,
      });
      this.stopWatching = agent.watchPodStatuses(() => void this.mirrors?.reconcile());
      // The agent's events in the API, with the kubelet's reasons; the node's first two as the kubelet says them.
      this.events = new NodeEvents({
        api: this.kubeConfig.makeApiClient(EventsV1Api),
        nodeName: options.nodeName,
        agent,
        isApiPod: (podId) => this.source.has(podId),
        mirrorOf: (podId) => this.mirrors?.mirrorOf(podId),
        logger: options.logger,
      });
      this.events.start();
      void this.events
        .node('Starting', 'Starting kubelet.')
        .then(() => this.events?.node('NodeReady', `Node ${options.nodeName} status is now: NodeReady`));
      const tick = () => {
        void this.mirrors?.reconcile();
        this.mirrorTimer = setTimeout(tick, 10_000);
      };
      tick();
      this.registered(uid);
    });
  }

  /** The Node's uid once registered. */
  get nodeUid(): Promise<string> {
    return this.nodeRegistered;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.mirrorTimer !== undefined) clearTimeout(this.mirrorTimer);
    this.stopWatching?.();
    this.events?.close();
    await this.lease?.close();
    await this.registration?.close();
    await this.writer?.close();
    await this.source.close();
    this.connections.release();
  }
}

/**
 * The kubeconfig's server as the pods' way to the API server, unless it is loopback (a pod in a
 * network namespace of its own would dial itself): then none, said once.
 */
function reachableServer(kubeConfig: KubeConfig, logger: Logger): PodApiServer | undefined {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (server === undefined) return undefined;
  const url = new URL(server);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1' || host.startsWith('127.')) {
    logger.warn(
      { server },
      `the kubeconfig's server ${server} is loopback, which pods cannot reach: they get the kubernetes Service's ClusterIP in KUBERNETES_SERVICE_HOST, which only a service proxy serves; give --pod-api-server host:port to say where they reach the API server`,
    );
    return undefined;
  }
  return { host, port: Number(url.port === '' ? 443 : url.port) };
}
