import { CommanderError, Option, type Command } from 'commander';
import { AgentClient, AgentClientError, DEFAULT_AGENT_SERVER, DEFERRED_EXTRA_CA_CERTS, type AgentClientOptions } from './agent-client.js';
import { readKubeconfig } from './kubeconfig.js';

/** The exit codes, as each client command's `--help` ends. */
export const EXIT_CODES_HELP = `
Exit codes:
  0  done
  1  a usage error, or anything else that went wrong
  2  the agent cannot be reached (connection refused, timed out, name not resolved)
  3  the agent refused the credentials (HTTP 401 or 403)
  4  TLS failed (certificate not signed by the CA, unknown CA, wrong host name)`;

/** What `addConnectionOptions` gives a command, parsed (a flag not given is undefined). */
export interface ConnectionOptions {
  readonly namespace?: string;
  readonly server?: string;
  readonly token?: string;
  readonly certificateAuthority?: string;
  readonly clientCertificate?: string;
  readonly clientKey?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly kubeconfig?: string;
  readonly context?: string;
}

/**
 * Parses a client command's arguments, its help and errors written to `io`: the exit code when
 * the parse ended the command (0 after `--help`, 1 on a bad argument), else undefined.
 */
export function parseClientCommand(
  program: Command,
  argv: readonly string[],
  io: { readonly stdout: NodeJS.WritableStream; readonly stderr: NodeJS.WritableStream },
): number | undefined {
  program.exitOverride().configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
  try {
    program.parse([...argv], { from: 'user' });
    return undefined;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1;
    throw error;
  }
}

/**
 * The options every command that talks to a running agent takes: where it is and how to prove
 * who we are, from flags or a kubeconfig file as kubectl reads one (see `resolveConnection`), and
 * `-n`. The help ends with the exit codes.
 */
export function addConnectionOptions(command: Command): Command {
  return command
    .addOption(new Option('-n, --namespace <namespace>', "the namespace (default: the kubeconfig context's, else default)"))
    .addOption(new Option('-s, --server <url>', `the agent's server (default: the kubeconfig's cluster, else ${DEFAULT_AGENT_SERVER})`))
    .addOption(new Option('--token <token>', "bearer token (default: the kubeconfig user's, else $KUBELET_TS_AUTH_TOKEN)"))
    .addOption(new Option('--certificate-authority <path>', "PEM CA the server's certificate must chain to"))
    .addOption(new Option('--client-certificate <path>', 'PEM client certificate (with --client-key)'))
    .addOption(new Option('--client-key <path>', 'PEM key of --client-certificate'))
    .addOption(new Option('--insecure-skip-tls-verify', "do not check the server's certificate (its traffic is still encrypted)"))
    .addOption(new Option('--kubeconfig <path>', 'a kubeconfig file (default: the first file of $KUBECONFIG)'))
    .addOption(new Option('--context <name>', 'the kubeconfig context to use (default: its current-context)'))
    .addHelpText('after', EXIT_CODES_HELP);
}

/**
 * Where the agent is and how to reach it, from the flags, then the kubeconfig, then the
 * defaults: flags win over the kubeconfig, field by field, as kubectl merges them. The token's
 * last fallback is `$KUBELET_TS_AUTH_TOKEN` (after the kubeconfig: a kubeconfig's user goes with
 * its cluster, a token in the environment may be meant for another agent).
 */
export async function resolveConnection(
  flags: ConnectionOptions,
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ readonly client: AgentClientOptions; readonly namespace: string }> {
  const file = await readKubeconfig(flags, env);
  if (flags.insecureSkipTlsVerify === true && flags.certificateAuthority !== undefined)
    throw new AgentClientError('--insecure-skip-tls-verify and --certificate-authority contradict each other: give one');
  // A CA given by flag means "check"; skipping by flag drops the kubeconfig's CA (kubectl does both).
  const caFromFile = flags.insecureSkipTlsVerify === true || flags.certificateAuthority !== undefined ? undefined : file.tls.ca;
  const insecure =
    flags.insecureSkipTlsVerify ?? (flags.certificateAuthority === undefined ? file.insecureSkipTlsVerify : undefined) ?? false;
  // A client certificate comes with its own key: both from the flags, or both from the kubeconfig.
  const flagsPair = flags.clientCertificate !== undefined || flags.clientKey !== undefined;
  return {
    namespace: flags.namespace ?? file.namespace ?? 'default',
    client: {
      server: flags.server ?? file.server ?? DEFAULT_AGENT_SERVER,
      token: flags.token ?? file.token ?? env['KUBELET_TS_AUTH_TOKEN'],
      certificateAuthority: flags.certificateAuthority ?? caFromFile?.path,
      certificateAuthorityData: caFromFile?.data,
      clientCertificate: flagsPair ? flags.clientCertificate : file.tls.cert?.path,
      clientCertificateData: flagsPair ? undefined : file.tls.cert?.data,
      clientKey: flagsPair ? flags.clientKey : file.tls.key?.path,
      clientKeyData: flagsPair ? undefined : file.tls.key?.data,
      insecureSkipTlsVerify: insecure,
      extraCaCertificates: env[DEFERRED_EXTRA_CA_CERTS] || undefined,
    },
  };
}

/** `resolveConnection` and `AgentClient.connect` in one: the client, and the namespace to work in. */
export async function openAgent(
  flags: ConnectionOptions,
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ readonly client: AgentClient; readonly namespace: string }> {
  const { client, namespace } = await resolveConnection(flags, env);
  return { client: await AgentClient.connect(client), namespace };
}

/** Writes an `AgentClientError` as the command's one line and gives its exit code; rethrows anything else. */
export function failed(command: string, error: unknown, stderr: NodeJS.WritableStream): number {
  if (!(error instanceof AgentClientError)) throw error;
  stderr.write(`${command}: ${error.message}\n`);
  return error.exitCode;
}
