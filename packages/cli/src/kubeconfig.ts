import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
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

/** The parts of a kubeconfig (clientcmd's `Config`, v1) read here. */
interface Kubeconfig {
  readonly 'current-context'?: string;
  readonly contexts?: ReadonlyArray<{ readonly name?: string; readonly context?: Record<string, unknown> }>;
  readonly clusters?: ReadonlyArray<{ readonly name?: string; readonly cluster?: Record<string, unknown> }>;
  readonly users?: ReadonlyArray<{ readonly name?: string; readonly user?: Record<string, unknown> }>;
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
  let config: Kubeconfig;
  // Loaded here: a kubeconfig is the only YAML a client command reads.
  const { parse } = await import('yaml');
  try {
    config = (parse(text) ?? {}) as Kubeconfig;
  } catch (error) {
    throw new AgentClientError(`${path} is not a kubeconfig: ${firstLine((error as Error).message)}`, 'Failed', { cause: error });
  }
  if (typeof config !== 'object' || Array.isArray(config)) throw new AgentClientError(`${path} is not a kubeconfig: not a YAML mapping`);
  return settingsOf(config, path, flags.context);
}

function settingsOf(config: Kubeconfig, path: string, wanted: string | undefined): KubeconfigSettings {
  const contextName = wanted ?? config['current-context'];
  // No context chosen: kubectl uses none of the file's clusters either.
  if (contextName === undefined || contextName === '') return { tls: {} };
  const named = <T extends { readonly name?: string }>(list: readonly T[] | undefined) => (list ?? []).find((e) => e.name === contextName);
  const context = named(config.contexts)?.context;
  if (context === undefined) {
    const known = (config.contexts ?? []).map((c) => c.name).filter((n) => n !== undefined);
    throw new AgentClientError(
      `context "${contextName}" is not in the kubeconfig ${path} (its contexts: ${known.length === 0 ? 'none' : known.join(', ')})`,
    );
  }
  const clusterName = text(context['cluster']);
  const userName = text(context['user']);
  const cluster = clusterName === undefined ? {} : (config.clusters ?? []).find((c) => c.name === clusterName)?.cluster;
  if (cluster === undefined)
    throw new AgentClientError(`context "${contextName}" in ${path} names cluster "${clusterName}", which the file does not define`);
  const user = userName === undefined ? {} : (config.users ?? []).find((u) => u.name === userName)?.user;
  if (user === undefined)
    throw new AgentClientError(`context "${contextName}" in ${path} names user "${userName}", which the file does not define`);
  const relative = (p: string | undefined) => (p === undefined || isAbsolute(p) ? p : resolve(dirname(path), p));
  const pem = (file: unknown, data: unknown): PemSource | undefined => {
    const decoded = text(data);
    if (decoded !== undefined) return { data: Buffer.from(decoded, 'base64') };
    const p = relative(text(file));
    return p === undefined ? undefined : { path: p };
  };
  const insecure = cluster['insecure-skip-tls-verify'];
  const ca = pem(cluster['certificate-authority'], cluster['certificate-authority-data']);
  const cert = pem(user['client-certificate'], user['client-certificate-data']);
  const key = pem(user['client-key'], user['client-key-data']);
  return {
    ...optional('server', text(cluster['server'])),
    ...optional('token', text(user['token'])),
    ...optional('namespace', text(context['namespace'])),
    ...(typeof insecure === 'boolean' ? { insecureSkipTlsVerify: insecure } : {}),
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
