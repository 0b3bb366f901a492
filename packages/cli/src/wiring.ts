import 'reflect-metadata';
import { isIP } from 'node:net';
import {
  ClientCertificate,
  ClusterAuth,
  ClusterNode,
  ServingCertificateRequester,
  firstMachineAddress,
  selfSignedServingCertificate,
  type ServingFiles,
} from '@kubelet-ts/cluster';
import { Tokens, hostAccessOf, isLoopback, nodeLabelsOf, type HostAccess, type Logger } from '@kubelet-ts/core';
import { LogEventSink } from '@kubelet-ts/runner';
import { registerCriRuntime } from '@kubelet-ts/runtime-cri';
import { registerDockerRuntime } from '@kubelet-ts/runtime-docker';
import { registerMemoryRuntime } from '@kubelet-ts/runtime-memory';
import { registerEtcdEventSink, registerEtcdSource, type EtcdAuthOptions, type EtcdTlsOptions } from '@kubelet-ts/source-etcd';
import { registerFileSource } from '@kubelet-ts/source-file';
import { parseHeaderFlag, registerHttpSource, type HttpSourceTlsOptions } from '@kubelet-ts/source-http';
import { registerServerSource, type DelegatedAuth, type ServerManifestSource, type ServerTlsOptions } from '@kubelet-ts/source-server';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import { nodeAllocatable } from './node-allocatable.js';
import type { CliOptions } from './options.js';

export interface Wiring {
  /** Holds the runtime, the sources (in priority order), the event sinks, the logger. */
  readonly container: DependencyContainer;
  /** The agent's own server; absent in plan mode. */
  readonly server?: ServerManifestSource;
  /** With `--kubeconfig`: the node of the cluster, whose pod source is registered; started once the agent is. */
  readonly cluster?: ClusterNode;
  /** Closes what the container holds that the agent does not close itself (the etcd event sink). */
  close(): Promise<void>;
}

/**
 * The command line, registered in a DI container through each adapter's `register…()` function,
 * exactly as an embedder would: the runtime (`--runtime`: docker, cri or memory), then the four sources of the 2014 agent
 * in priority order (file, url, etcd, server; the earlier wins a manifest id given twice), and the
 * event sinks (the log, and etcd when `--etcd-servers` is set). `resolveKubelet` builds the agent
 * from it.
 */
export async function wire(
  options: CliOptions,
  hostname: string,
  logger: Logger,
  mode: 'agent' | 'plan' | 'runonce' = 'agent',
  givenHostname = hostname,
): Promise<Wiring> {
  const container = rootContainer.createChildContainer();
  container.register(Tokens.Logger, { useValue: logger });
  // What every source checks a pod against: the host access allowed, and this node's labels.
  const access = hostAccessOf({ ...options, nodeLabels: nodeLabelsOf(options.nodeLabels, hostname) });
  const runtime = await registerRuntime(container, options, logger);
  if (options.config !== undefined)
    registerFileSource(container, {
      path: options.config,
      checkFrequencyMs: options.fileCheckFrequency,
      ...access,
    });
  if (options.manifestUrl !== undefined) {
    registerHttpSource(container, {
      ...access,
      url: options.manifestUrl,
      checkFrequencyMs: options.httpCheckFrequency,
      timeoutMs: options.manifestUrlTimeout,
      headers: Object.fromEntries(options.manifestUrlHeader.map(parseHeaderFlag)),
      ...manifestUrlTls(options),
    });
  }
  // --runonce reads the file and the URL only, as the 2014 agent's run-once did.
  if (options.etcdServers !== undefined && mode !== 'runonce')
    registerEtcdSource(container, {
      endpoints: [...options.etcdServers],
      hostname: givenHostname,
      logger,
      ...access,
      ...etcdSecurity(options),
    });
  if (mode === 'runonce') {
    container.register(Tokens.EventSink, { useValue: new LogEventSink(logger) });
    return { container, close: () => runtime.close() };
  }
  if (mode === 'plan') {
    // A plan reads the sources once; the server's set lives in the running agent (GET /plan there).
    return { container, close: () => runtime.close() };
  }
  container.register(Tokens.EventSink, { useValue: new LogEventSink(logger) });
  const nodeIp = options.kubeconfig === undefined ? undefined : nodeAddress(options);
  // TLS bootstrap: the node's own kubeconfig first, asked for with the bootstrap token when it is not there.
  const client = await clientCertificate(options, hostname, logger);
  const cluster = nodeIp === undefined ? undefined : await clusterNode(options, hostname, nodeIp, access, runtime, logger);
  if (cluster !== undefined) container.register(Tokens.Source, { useValue: cluster.source });
  const delegated = delegatedAuth(options, cluster, logger);
  const etcdEvents =
    options.etcdServers === undefined
      ? undefined
      : registerEtcdEventSink(container, { endpoints: [...options.etcdServers], logger, ...etcdSecurity(options) });
  let requester: ServingCertificateRequester | undefined;
  const close = async () => {
    requester?.close();
    client?.close();
    await cluster?.close();
    await etcdEvents?.close();
    await runtime.close();
  };
  // --enable-server=false (2014): no server, so neither its manifest routes nor the read API.
  if (!options.enableServer) return { container, close, ...(cluster === undefined ? {} : { cluster }) };
  // A node of a cluster serves HTTPS, as the kubelet does: its own files, else a certificate for its names.
  let serving: ServingFiles | undefined;
  if (cluster !== undefined && nodeIp !== undefined && options.tlsCertFile === undefined && options.tlsPrivateKeyFile === undefined) {
    const names = { nodeName: hostname, addresses: servingAddresses(nodeIp, options.address) };
    if (options.rotateServerCertificates) {
      requester = new ServingCertificateRequester({ ...names, kubeConfig: cluster.kubeConfig, certDir: options.certDir, logger });
      serving = await requester.start();
    } else serving = await selfSignedServingCertificate(options.certDir, names);
  } else if (options.rotateServerCertificates)
    throw new Error('--rotate-server-certificates asks the cluster for the serving certificate: give --kubeconfig, and no --tls-cert-file');
  if (cluster !== undefined && options.clientCaFile === undefined)
    logger.warn(
      {},
      "--kubeconfig without --client-ca-file: the API server reaches the agent (kubectl logs, exec, attach, port-forward) with a client certificate the agent cannot check, and is refused (401); give --client-ca-file (the cluster's CA)",
    );
  const server = registerServerSource(container, {
    ...access,
    address: options.address,
    port: options.port,
    ...(options.authToken === undefined ? {} : { authToken: options.authToken }),
    allowedHosts: options.allowedHost,
    ...serverTls(options, serving),
    ...(delegated === undefined ? {} : { delegated }),
    insecureAllowUnauthenticated: options.insecureAllowUnauthenticated,
    // The API server passes on its own client's Host (see `checkHost`).
    ...(cluster === undefined ? {} : { checkHost: false }),
    logger,
  });
  return {
    container,
    server,
    close,
    ...(cluster === undefined ? {} : { cluster }),
  };
}

/**
 * `--kubeconfig`: the node of that cluster, named as the agent is, reached at `--node-ip` (or the
 * host's first non-loopback IPv4 address; loopback is refused, as the kubelet refuses it: the API
 * server could not reach the agent there).
 */
async function clusterNode(
  options: CliOptions,
  hostname: string,
  address: string,
  access: HostAccess,
  runtime: RegisteredRuntime,
  logger: Logger,
): Promise<ClusterNode> {
  return new ClusterNode({
    ...access,
    kubeconfigPath: options.kubeconfig!,
    nodeName: hostname,
    address,
    port: options.port,
    ...(options.nodeLabels === undefined ? {} : { labels: options.nodeLabels }),
    allocatable: nodeAllocatable(options),
    fsPath: options.volumesRoot,
    containerRuntimeVersion: await runtime.version().catch(() => 'unknown://'),
    nodeStatusUpdateFrequencyMs: options.nodeStatusUpdateFrequency,
    nodeStatusReportFrequencyMs: options.nodeStatusReportFrequency,
    ...(options.registerWithTaints === undefined ? {} : { taints: options.registerWithTaints }),
    nodeLeaseDurationSeconds: options.nodeLeaseDurationSeconds,
    declaredFeatures: declaredFeatures(options),
    ...(options.podApiServer === undefined ? {} : { podApiServer: options.podApiServer }),
    logger,
  });
}

/**
 * `--bootstrap-kubeconfig` (with `--kubeconfig`, where the node's own is written, and `--cert-dir`):
 * resolves once the node has its credentials; with `--rotate-certificates`, keeps them renewed.
 */
async function clientCertificate(options: CliOptions, hostname: string, logger: Logger): Promise<ClientCertificate | undefined> {
  if (options.bootstrapKubeconfig === undefined) {
    if (options.rotateCertificates) throw new Error('--rotate-certificates renews what --bootstrap-kubeconfig obtained: give both');
    return undefined;
  }
  if (options.kubeconfig === undefined)
    throw new Error(
      "--bootstrap-kubeconfig needs --kubeconfig: the path where the node's own kubeconfig is written (and read once it is there)",
    );
  const client = new ClientCertificate({
    bootstrapKubeconfigPath: options.bootstrapKubeconfig,
    kubeconfigPath: options.kubeconfig,
    certDir: options.certDir,
    nodeName: hostname,
    logger,
  });
  await client.ensure();
  if (options.rotateCertificates) await client.startRotation();
  return client;
}

/** The Node's InternalIP: `--node-ip`, or the host's first non-loopback IPv4 address; never loopback. */
function nodeAddress(options: CliOptions): string {
  const address = options.nodeIp ?? firstMachineAddress();
  if (address === undefined) throw new Error('--kubeconfig: this host has no IPv4 address but loopback; give --node-ip');
  if (isIP(address) === 0) throw new Error(`--node-ip ${JSON.stringify(address)} is not an IP address`);
  if (isLoopback(address))
    throw new Error(`--node-ip ${address} is a loopback address: the API server could not reach the agent there; give a machine address`);
  return address;
}

/** The serving certificate's addresses: the node's, and `--address` when it names one of its own. */
function servingAddresses(nodeIp: string, address: string): string[] {
  const wildcard = address === '0.0.0.0' || address === '::' || isIP(address) === 0;
  return wildcard || address === nodeIp ? [nodeIp] : [nodeIp, address];
}

/** What the Node declares (`status.declaredFeatures`): the gates on that the API server reads. */
function declaredFeatures(options: CliOptions): string[] {
  return options.featureGates.ExtendWebSocketsToKubelet === false ? [] : ['ExtendWebSocketsToKubelet'];
}

/**
 * `--authentication-token-webhook`, `--authorization-mode Webhook` (both the default with
 * `--kubeconfig`, as in the kubelet's configuration file) and `--anonymous-auth`: who calls the
 * agent's server, asked of the cluster. The webhooks need a cluster to ask.
 */
function delegatedAuth(options: CliOptions, cluster: ClusterNode | undefined, logger: Logger): DelegatedAuth | undefined {
  const tokenReview = options.authenticationTokenWebhook ?? cluster !== undefined;
  const accessReview = (options.authorizationMode ?? (cluster === undefined ? 'AlwaysAllow' : 'Webhook')) === 'Webhook';
  if ((tokenReview || accessReview) && cluster === undefined)
    throw new Error(
      `${tokenReview ? '--authentication-token-webhook' : '--authorization-mode Webhook'} asks the cluster who calls the agent: give --kubeconfig`,
    );
  if (cluster === undefined) return options.anonymousAuth ? { nodeName: '', anonymous: true } : undefined;
  return new ClusterAuth({
    kubeConfig: cluster.kubeConfig,
    nodeName: cluster.nodeName,
    tokenReview,
    accessReview,
    anonymous: options.anonymousAuth,
    tokenCacheMs: options.authenticationTokenWebhookCacheTtl,
    authorizedCacheMs: options.authorizationWebhookCacheAuthorizedTtl,
    unauthorizedCacheMs: options.authorizationWebhookCacheUnauthorizedTtl,
    logger,
  });
}

/** `--tls-cert-file`/`--tls-private-key-file` go together; `--client-ca-file` needs them (it is a TLS check). */
function serverTls(options: CliOptions, serving: ServingFiles | undefined): { tls?: ServerTlsOptions } {
  const { clientCaFile } = options;
  const certFile = options.tlsCertFile ?? serving?.certFile;
  const keyFile = options.tlsPrivateKeyFile ?? serving?.keyFile;
  if (certFile === undefined && keyFile === undefined) {
    if (clientCaFile !== undefined)
      throw new Error(
        '--client-ca-file needs --tls-cert-file and --tls-private-key-file: client certificates are checked in the TLS handshake',
      );
    return {};
  }
  if (certFile === undefined || keyFile === undefined) throw new Error('--tls-cert-file and --tls-private-key-file go together: give both');
  return { tls: { certFile, keyFile, ...(clientCaFile === undefined ? {} : { clientCaFile }) } };
}

function etcdSecurity(options: CliOptions): { tls?: EtcdTlsOptions; auth?: EtcdAuthOptions } {
  const { etcdCafile: caFile, etcdCertfile: certFile, etcdKeyfile: keyFile, etcdUsername: username, etcdPassword: password } = options;
  if ((username === undefined) !== (password === undefined))
    throw new Error('--etcd-username and --etcd-password (or KUBELET_TS_ETCD_PASSWORD) go together: give both');
  const tls = caFile === undefined && certFile === undefined && keyFile === undefined ? undefined : { caFile, certFile, keyFile };
  return {
    ...(tls === undefined ? {} : { tls: defined(tls) }),
    ...(username === undefined || password === undefined ? {} : { auth: { username, password } }),
  };
}

function manifestUrlTls(options: CliOptions): { tls?: HttpSourceTlsOptions } {
  const { manifestUrlCaFile: caFile, manifestUrlCertFile: certFile, manifestUrlKeyFile: keyFile } = options;
  if (caFile === undefined && certFile === undefined && keyFile === undefined) return {};
  return { tls: defined({ caFile, certFile, keyFile }) };
}

/** The object without its undefined fields (exactOptionalPropertyTypes). */
function defined<T extends Record<string, string | undefined>>(object: T): { [K in keyof T]?: string } {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: string };
}

/**
 * `auto` takes Docker when an engine answers within a second, else the CRI endpoint when it
 * answers, else the in-memory runtime, loudly. The one chosen is registered last, so it is resolved.
 */
/** The runtime the container holds, as the CLI closes it and a Node names it (`nodeInfo.containerRuntimeVersion`). */
interface RegisteredRuntime {
  close(): Promise<void>;
  /** `<engine>://<version>`. */
  version(): Promise<string>;
}

async function registerRuntime(container: DependencyContainer, options: CliOptions, logger: Logger): Promise<RegisteredRuntime> {
  const none = { close: async () => {}, version: async () => 'memory://0.1.0' };
  if (options.runtime === 'memory') {
    registerMemoryRuntime(container);
    return none;
  }
  const cri = () =>
    registerCriRuntime(container, {
      endpoint: options.containerRuntimeEndpoint,
      volumesRoot: options.volumesRoot,
      logsRoot: options.podLogsDir,
      containerLogLinksDir: options.containerLogLinksDir === '' ? false : options.containerLogLinksDir,
      containerLogs: { maxSizeBytes: options.containerLogMaxSize, maxFiles: options.containerLogMaxFiles },
      hostIp: options.hostIp,
      ...(options.cgroupRoot === undefined ? {} : { cgroupParent: options.cgroupRoot }),
      logger,
    });
  const criRegistered = (runtime: ReturnType<typeof cri>): RegisteredRuntime => ({
    close: async () => runtime.close(),
    version: async () => {
      const v = await runtime.version();
      return `${v.runtimeName}://${v.runtimeVersion}`;
    },
  });
  if (options.runtime === 'cri') return criRegistered(cri());
  const docker = registerDockerRuntime(container, {
    ...(options.dockerHost === undefined ? {} : { host: options.dockerHost }),
    volumesRoot: options.volumesRoot,
    podInfraImage: options.podInfraImage,
    hostIp: options.hostIp,
    logger,
    containerLogs: { maxSizeBytes: options.containerLogMaxSize, maxFiles: options.containerLogMaxFiles },
  });
  // Its port-forward helpers, if any ran, end with the agent.
  const dockerClosed = { close: async () => docker.close(), version: () => docker.runtimeVersion() };
  if (options.runtime === 'docker') return dockerClosed;
  const reasons: string[] = [];
  try {
    await withTimeout(docker.ping(), 1000);
    logger.info({ runtime: 'docker', endpoint: docker.endpoint }, 'using the Docker engine');
    return dockerClosed;
  } catch (error) {
    reasons.push(`docker at ${docker.endpoint}: ${(error as Error).message}`);
  }
  const runtime = cri();
  try {
    await withTimeout(runtime.version(), 1000);
    logger.info({ runtime: 'cri', endpoint: runtime.endpoint }, 'using the CRI runtime');
    return criRegistered(runtime);
  } catch (error) {
    reasons.push(`cri at ${runtime.endpoint}: ${(error as Error).message}`);
    await runtime.close();
  }
  logger.warn(
    { runtime: 'memory', reasons },
    'NO CONTAINER ENGINE ANSWERS: running on the IN-MEMORY runtime; containers are simulated and nothing runs on this host (use --runtime docker or --runtime cri to insist on an engine)',
  );
  registerMemoryRuntime(container);
  return none;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
