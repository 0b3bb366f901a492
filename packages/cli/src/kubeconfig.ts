import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { KubeConfig, User } from '@kubernetes/client-node';
import { AgentClientError } from './agent-client.js';

/** A PEM file's path, or its contents (a kubeconfig's `…-data`, base64-decoded). */
export interface PemSource {
  readonly path?: string;
  readonly data?: Buffer;
}

/** What a kubeconfig's chosen context says about reaching its cluster; fields it does not set are absent. */
export interface KubeconfigSettings {
  readonly server?: string;
  readonly token?: string;
  readonly namespace?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly tls: { readonly ca?: PemSource; readonly cert?: PemSource; readonly key?: PemSource };
}

/**
 * The kubeconfig kubectl would read, its context's cluster, user and namespace: the file of
 * `--kubeconfig`, else the first file of `$KUBECONFIG` (kubectl merges every file of that
 * colon-separated list; the first is enough for one agent, and a missing one is skipped as kubectl
 * skips it). `~/.kube/config` is not read: it names an API server, not an agent, and with nothing
 * given the client keeps to the agent's default address. The context is `--context`, else the
 * file's `current-context`; paths in the file are relative to the file, as kubectl takes them.
 *
 * Throws an `AgentClientError` (exit 1) for a `--kubeconfig` that cannot be read, a file that is
 * not a kubeconfig, an unknown context, or a context naming a cluster or user the file lacks.
 */
export async function readKubeconfig(
  flags: { readonly kubeconfig?: string; readonly context?: string },
  env: Readonly<Record<string, string | undefined>>,
): Promise<KubeconfigSettings> {
  const fromEnv = env['KUBECONFIG']?.split(':').find((p) => p !== '');
  const path = flags.kubeconfig ?? fromEnv;
  if (path === undefined) {
    if (flags.context !== undefined)
      throw new AgentClientError(`--context ${flags.context}: there is no kubeconfig to find it in (give --kubeconfig or set $KUBECONFIG)`);
    return { tls: {} };
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (flags.kubeconfig === undefined && (error as NodeJS.ErrnoException).code === 'ENOENT' && flags.context === undefined)
      return { tls: {} };
    const named = flags.kubeconfig === undefined ? `$KUBECONFIG's ${path}` : `--kubeconfig ${path}`;
    throw new AgentClientError(`cannot read the kubeconfig ${named}: ${(error as Error).message}`, 'Failed', { cause: error });
  }
  // Loaded here: a kubeconfig is the only YAML a client command reads. Its shape is checked first
  // (client-node's reader takes a list or a scalar for an empty config, where a mistake should be said).
  const { parse } = await import('yaml');
  let shape: unknown;
  try {
    shape = parse(text);
  } catch (error) {
    throw new AgentClientError(`${path} is not a kubeconfig: ${firstLine((error as Error).message)}`, 'Failed', { cause: error });
  }
  if (shape === null || shape === undefined) return { tls: {} };
  if (typeof shape !== 'object' || Array.isArray(shape)) throw new AgentClientError(`${path} is not a kubeconfig: not a YAML mapping`);
  // Read as the cluster parts read theirs: @kubernetes/client-node's KubeConfig (entries it cannot
  // use left out, paths made relative to the file, as kubectl takes them).
  const { KubeConfig } = await import('@kubernetes/client-node');
  const config = new KubeConfig();
  try {
    config.loadFromString(text, { onInvalidEntry: 'filter' });
  } catch (error) {
    throw new AgentClientError(`${path} is not a kubeconfig: ${firstLine((error as Error).message)}`, 'Failed', { cause: error });
  }
  config.makePathsAbsolute(dirname(path));
  return settingsOf(config, path, flags.context);
}

function settingsOf(config: KubeConfig, path: string, wanted: string | undefined): KubeconfigSettings {
  const contextName = wanted ?? config.getCurrentContext();
  // No context chosen: kubectl uses none of the file's clusters either.
  if (contextName === undefined || contextName === null || contextName === '') return { tls: {} };
  const context = config.getContextObject(contextName);
  if (context === null) {
    const known = config.getContexts().map((c) => c.name);
    throw new AgentClientError(
      `context "${contextName}" is not in the kubeconfig ${path} (its contexts: ${known.length === 0 ? 'none' : known.join(', ')})`,
    );
  }
  const cluster = config.getCluster(context.cluster);
  if (cluster === null)
    throw new AgentClientError(`context "${contextName}" in ${path} names cluster "${context.cluster}", which the file does not define`);
  const user = context.user === undefined || context.user === '' ? {} : config.getUser(context.user);
  if (user === null)
    throw new AgentClientError(`context "${contextName}" in ${path} names user "${context.user}", which the file does not define`);
  const pem = (file: string | undefined, data: string | undefined): PemSource | undefined => {
    if (text(data) !== undefined) return { data: Buffer.from(data!, 'base64') };
    return text(file) === undefined ? undefined : { path: file! };
  };
  const ca = pem(cluster.caFile, cluster.caData);
  const cert = pem((user as Partial<User>).certFile, (user as Partial<User>).certData);
  const key = pem((user as Partial<User>).keyFile, (user as Partial<User>).keyData);
  return {
    ...optional('server', text(cluster.server)),
    ...optional('token', text((user as Partial<User>).token)),
    ...optional('namespace', text(context.namespace)),
    ...(cluster.skipTLSVerify ? { insecureSkipTlsVerify: true } : {}),
    tls: { ...optional('ca', ca), ...optional('cert', cert), ...optional('key', key) },
  };
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}
